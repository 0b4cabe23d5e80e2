"""Apply a micro-batch of ``view=space`` changes to a copy of the space: full row images to upsert, keys to delete.

A ``foreachBatch`` that keeps a table (Delta, ...) in step with a Tarantool space cannot MERGE the change rows
directly: an UPDATE or UPSERT row holds operations, not the row after them.  :func:`apply_changes` takes the batch
(in ``seq`` order) and the target's current rows for the keys the batch touches (:func:`touched_keys` says which),
replays every change on them with ``replay.py``'s :class:`~.replay.TupleStore` (the code ``view=state`` runs: one
implementation of Tarantool's semantics) and returns the rows to upsert and the keys to delete, typed like
``view=space``'s row columns, each with the ``seq`` of the last change that made it.  The recipe and its limits are
in ``docs/tarantool-cdc.md``; the semantics in ``docs/formats/tarantool-typed.md``.  Spark-free: Arrow in and out.

Guards: a change whose ``seq`` is at or below ``applied_seq`` (the table's high-water mark: every change up to it is
in the table) or at or below the ``seq`` stored with the row it changes is skipped, so a batch applied twice changes
nothing the second time. A snapshot's tuples all share the snapshot's ``seq``: the mark skips them only below it (a
snapshot read in several batches leaves the mark there after the first), the row guard skips those stored already.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_logsource.api import make_format
from spark_logsource.arrow.columns import variant_field
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.tarantool.table.catalog import SpaceDef
from spark_logsource.tarantool.table.replay import ReplayError, TupleStore
from spark_logsource.tarantool.table.space_view import SNAPSHOT_OP, SpaceView
from spark_logsource.tarantool.table.typed import FieldTypeError, column_name, row_fields, typed_array, variant_column

__all__ = ["Applied", "SpaceSpec", "apply_changes", "space_spec", "touched_keys"]

log = logging.getLogger(__name__)

SEQ = "seq"
EXTRA = "extra_fields"


@dataclass(frozen=True)
class SpaceSpec:
    """What the apply needs of a space: its format (the version the batch is applied with), its indexes, and the
    typed columns of ``view=space`` (every field name the space ever had, with its column type)."""

    space: SpaceDef
    columns: dict[str, pa.DataType | str]
    reserved: tuple[str, ...]

    @property
    def primary_key(self) -> tuple[int, ...]:
        pk = self.space.primary_key
        if pk is None:
            raise OptionError("space", f"space {self.space.name!r} has no primary index on plain fields")
        return pk

    def column_of(self, fno: int) -> str:
        return column_name(self.space.fields[fno].name, self.reserved)

    @property
    def key_columns(self) -> list[str]:
        """The primary key's column names (the MERGE's join condition)."""
        return [self.column_of(f) for f in self.primary_key]

    def indexes(self) -> list[tuple[int, tuple[int, ...]]]:
        """The indexes on plain fields, primary first: the ways an UPDATE or DELETE may name its tuple."""
        return sorted((iid, parts) for iid, parts in self.space.indexes
                      if parts is not None and all(p < len(self.space.fields) for p in parts))

    def schema(self) -> pa.Schema:
        """The target's columns: ``view=space``'s typed columns, ``extra_fields`` and ``seq``."""
        fields = [pa.field(n, t) if not isinstance(t, str) else variant_field(n) for n, t in self.columns.items()]
        return pa.schema([*fields, variant_field(EXTRA), pa.field(SEQ, pa.int64())])


def space_spec(path: str | Sequence[str], space: str, **options: Any) -> SpaceSpec:
    """The :class:`SpaceSpec` of ``space`` as the catalog of a WAL directory's files defines it last."""
    fmt = make_format("tarantool-xlog", path, {**options, "view": "space", "space": space})
    view = fmt.typed()  # type: ignore[attr-defined]
    if not isinstance(view, SpaceView):
        raise OptionError("view", "space_spec needs view=space")
    defined = view.history.defined()
    if not defined:
        raise OptionError("space", f"space {space!r} has no known format in {path!r}")
    return SpaceSpec(defined[-1], dict(view.columns), tuple(view.reserved))


@dataclass
class Applied:
    """What one batch does to the target: rows to upsert (full images), keys to delete, and a truncate.

    ``truncated_at`` is the ``seq`` of the batch's last TRUNCATE (or None): every target row stored with a lower
    ``seq`` goes, except the rows of ``upserts``. ``last_seq`` is the largest ``seq`` of the batch (the new
    high-water mark once the result is stored); ``skipped`` counts changes the guards left out.
    """

    upserts: pa.Table
    deletes: pa.Table
    truncated_at: int | None
    last_seq: int | None
    skipped: int = 0
    applied: int = 0
    errors: list[str] = field(default_factory=list)


def _plain(cell: Any) -> Any:
    if isinstance(cell, dict) and set(cell) == {"value", "metadata"}:
        return None if cell["value"] is None else decode_variant(cell["value"], cell["metadata"])
    return cell


def _to_tarantool(value: Any, field_type: str) -> Any:
    """A typed cell back as the value Tarantool holds (a uuid's text → uuid; the rest as is)."""
    if value is None:
        return None
    if field_type == "uuid" and isinstance(value, str):
        return uuid.UUID(value)
    return value


def _tuple_of(spec: SpaceSpec, row: Mapping[str, Any]) -> list[Any]:
    """A typed row → a tuple of the spec's format.  With no ``extra_fields`` the trailing null fields are left
    out (a typed row does not say whether a trailing nullable field is absent or null)."""
    tup = [_to_tarantool(_plain(row.get(spec.column_of(i))), f.type) for i, f in enumerate(spec.space.fields)]
    extra = _plain(row.get(EXTRA))
    if isinstance(extra, list) and extra:
        return tup + extra
    while tup and tup[-1] is None:
        tup.pop()
    return tup


def _fix_types(spec: SpaceSpec, tup: list[Any]) -> list[Any]:
    """Values an operation argument brought in as text where the field holds a uuid (variant has no uuid)."""
    for i, f in enumerate(spec.space.fields[:len(tup)]):
        if f.type == "uuid" and isinstance(tup[i], str):
            try:
                tup[i] = uuid.UUID(tup[i])
            except ValueError:
                continue
    return tup


def _key_of_change(spec: SpaceSpec, row: Mapping[str, Any]) -> tuple[tuple[int, ...], list[Any]] | None:
    """The index an UPDATE / DELETE row names (the first whose key columns are all set) and its key values."""
    for _iid, parts in spec.indexes():
        values = [_to_tarantool(_plain(row.get(spec.column_of(p))), spec.space.fields[p].type) for p in parts]
        if all(v is not None for v in values):
            return parts, values
    return None


def touched_keys(spec: SpaceSpec, changes: pa.Table | pa.RecordBatch) -> list[tuple[list[str], pa.Table]]:
    """For each index the batch's changes name a tuple by: its key column names and the distinct keys (typed).

    The target rows to fetch before :func:`apply_changes` are those matching any of them (a semi join per entry).
    """
    table = changes if isinstance(changes, pa.Table) else pa.Table.from_batches([changes])
    out = []
    pk = spec.primary_key
    for iid, parts in spec.indexes():
        names = [spec.column_of(p) for p in parts]
        if not all(n in table.column_names for n in names):
            continue
        keys = table.select(names).drop_null()
        if iid != 0:
            # a secondary key is only the way a row names its tuple when its primary key columns are null
            pk_cols = [spec.column_of(p) for p in pk]
            sub = table.select(names + [c for c in pk_cols if c not in names])
            mask = [all(r[c] is None for c in pk_cols) for r in sub.to_pylist()]
            keys = sub.filter(pa.array(mask)).select(names).drop_null()
        if keys.num_rows:
            out.append((names, keys.group_by(names).aggregate([])))
    return out


def apply_changes(spec: SpaceSpec, changes: pa.Table | pa.RecordBatch, current: pa.Table | None,
                  applied_seq: int | None = None, *, strict: bool = True) -> Applied:
    """Replay ``changes`` (``view=space`` rows of one space, any order: they are sorted by ``seq``) on ``current``
    (the target's rows for the keys :func:`touched_keys` gives; more rows do no harm) and return the result.

    A corrupt-record row, a row without ``seq``, or a change that cannot be replayed raises
    :class:`CorruptDataError` when ``strict`` (a MERGE that skipped it would miss a change); otherwise it is
    counted in ``errors`` and the key keeps its value.
    """
    table = changes if isinstance(changes, pa.Table) else pa.Table.from_batches([changes])
    if SEQ not in table.column_names:
        raise OptionError("changes", "the changes have no seq column (read them with view=space)")
    table = table.sort_by([(SEQ, "ascending")]) if table.num_rows else table
    store = TupleStore(spec.primary_key)
    stored_seq: dict[tuple[Any, ...], int] = {}
    key_values: dict[tuple[Any, ...], list[Any]] = {}  # primary key → its fields as stored (for the deletes)
    pk_parts = spec.primary_key
    if current is not None:
        for row in current.to_pylist():
            tup = _tuple_of(spec, row)
            store.replace(tup)
            pk = store.key_of(tup)
            key_values[pk] = [tup[p] for p in pk_parts]
            stored_seq[pk] = int(row[SEQ]) if row.get(SEQ) is not None else -1
    touched: dict[tuple[Any, ...], int] = {}  # primary key → seq of the last change that touched it
    result = Applied(pa.table({}), pa.table({}), None, None)
    names = spec.space.names
    corrupt = [c for c in table.column_names if c.startswith("_corrupt")]
    for row in table.to_pylist():
        seq = row.get(SEQ)
        bad = next((row[c] for c in corrupt if row.get(c) is not None), None)
        if bad is not None or seq is None:
            _refuse(result, strict, f"lsn {row.get('lsn')}: {bad or 'no seq'}")
            continue
        result.last_seq = seq if result.last_seq is None else max(result.last_seq, seq)
        op = row["op"]
        # every tuple of a snapshot has the snapshot's seq, and a snapshot read in several micro-batches leaves the
        # mark at that seq after the first: its tuples are skipped only below the mark (the row guard below skips
        # a tuple stored already, so a snapshot batch applied twice still changes nothing)
        if applied_seq is not None and (seq < applied_seq if op == SNAPSHOT_OP else seq <= applied_seq):
            result.skipped += 1
            continue
        if op == SNAPSHOT_OP:  # a tuple a snapshot holds (a stream started at a snapshot): stored as it is
            op = "REPLACE"
        if op == "TRUNCATE":
            for gone in list(store.rows):
                touched[gone] = seq
            store.clear()
            stored_seq.clear()
            result.truncated_at = seq
            result.applied += 1
            continue
        try:
            target, parts, key = _target_of(spec, store, row, op)
        except ReplayError as exc:
            _refuse(result, strict, f"lsn {row.get('lsn')} (seq {seq}): {op} cannot be replayed: {exc}")
            continue
        if target is not None and stored_seq.get(target, -1) >= seq:
            result.skipped += 1
            continue
        try:
            store.apply(op, key=key, tup=_tuple_of(spec, row) if op in ("INSERT", "REPLACE", "UPSERT") else None,
                        ops=_plain(row.get("ops")), index_base=1, names=names, index_parts=parts)
        except ReplayError as exc:
            _refuse(result, strict, f"lsn {row.get('lsn')} (seq {seq}): {op} cannot be replayed: {exc}")
            continue
        result.applied += 1
        if target is not None:
            touched[target] = seq
            stored_seq[target] = seq
            if target in store.rows:
                key_values[target] = [store.rows[target][p] for p in pk_parts]
    result.upserts, result.deletes = _images(spec, store, touched, key_values)
    return result


def _target_of(spec: SpaceSpec, store: TupleStore, row: Mapping[str, Any],
               op: str) -> tuple[tuple[Any, ...] | None, tuple[int, ...] | None, Any]:
    """The primary key a change is about (None: no such tuple), the index parts it names it by, and its key."""
    if op in ("INSERT", "REPLACE", "UPSERT"):
        return store.key_of(_tuple_of(spec, row)), None, None
    named = _key_of_change(spec, row)
    if named is None:
        raise ReplayError("no key of an index of the space is set")
    parts, key = named
    index_parts = None if parts == spec.primary_key else parts
    return store.find(key, index_parts), index_parts, key


def _refuse(result: Applied, strict: bool, message: str) -> None:
    if strict:
        raise CorruptDataError("view=space changes", None, message)
    log.warning("not applied: %s", message)
    result.errors.append(message)


def _images(spec: SpaceSpec, store: TupleStore, touched: Mapping[tuple[Any, ...], int],
            key_values: Mapping[tuple[Any, ...], list[Any]]) -> tuple[pa.Table, pa.Table]:
    schema = spec.schema()
    rows: list[dict[str, Any]] = []
    gone: list[tuple[list[Any], int]] = []
    for pk, seq in touched.items():
        tup = store.rows.get(pk)
        if tup is None:
            gone.append((key_values[pk], seq))
            continue
        try:
            cells, extra = row_fields(_fix_types(spec, list(tup)), spec.space, spec.columns, spec.reserved)
        except FieldTypeError as exc:
            raise CorruptDataError(f"space {spec.space.name!r}", None, f"key {pk!r}: {exc}") from None
        cells[EXTRA] = extra
        cells[SEQ] = seq
        rows.append(cells)
    arrays = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if f.name == EXTRA:
            arrays.append(variant_column(values))
        else:
            arrays.append(typed_array(values, spec.columns.get(f.name, f.type)))
    upserts = pa.Table.from_arrays(arrays, schema=schema)
    key_cols = spec.key_columns
    key_cells: list[dict[str, Any]] = []
    for values, _seq in gone:
        key_tuple: list[Any] = [None] * len(spec.space.fields)
        for p, v in zip(spec.primary_key, values, strict=True):
            key_tuple[p] = v
        key_cells.append(row_fields(_fix_types(spec, key_tuple), spec.space, spec.columns, spec.reserved)[0])
    deletes = pa.Table.from_arrays(
        [typed_array([c.get(name) for c in key_cells], spec.columns[name]) for name in key_cols]
        + [pa.array([s for _, s in gone], pa.int64())],
        schema=pa.schema([*(schema.field(c) for c in key_cols), pa.field(SEQ, pa.int64())]))
    return upserts, deletes

