"""``view=space``: the changes of one space with its fields as typed columns (``docs/formats/tarantool-typed.md``).

Columns: ``op, lsn, tsn, timestamp, replica_id, seq``, one column per field name any format of the space ever had
(``typed.py``), ``ops`` (variant: UPDATE / UPSERT operations, field numbers 1-based), ``extra_fields`` (variant:
the fields beyond the format, the first of them being field ``len(format) + 1``), and the corrupt-record column in
PERMISSIVE mode.
INSERT, REPLACE and UPSERT rows fill the fields from their tuple; UPDATE and DELETE rows fill the fields of the
index key they name.  Each row is named by the format in force at its place in the log (``catalog.py``); a row
no known format names, or whose values do not fit it, is a corrupt-record row (PERMISSIVE), a logged skip
(DROPMALFORMED) or an error (FAILFAST) — never a guess.  Only ``.xlog`` rows are changes: snapshots are read
for the catalog and by ``view=state``.  A ``_truncate`` row for the space is an ``op='TRUNCATE'`` row.

``seq`` orders every change totally in the WAL's order: the signature (sum of the components) of the instance's
vclock just after the row, which every logged row raises (each row carries its own LSN, above the vclock's
component for its replica).  It is folded from the file's ``VClock:`` header over every row of the file before the
row (:func:`wal_order`), so rows of other spaces count too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import display_name, open_input
from spark_logsource.logformat import LogFormat, Split
from spark_logsource.options import ParseMode
from spark_logsource.tarantool.read.logrows import LogRow, file_key, iter_rows, read_vclock
from spark_logsource.tarantool.read.prune import prune_by_lsn
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches
from spark_logsource.tarantool.table.catalog import (
    TRUNCATE_SPACE,
    Catalog,
    SpaceDef,
    SpaceHistory,
    Version,
    build_catalog,
)
from spark_logsource.tarantool.table.replay import rebase_ops
from spark_logsource.tarantool.table.typed import (
    FieldTypeError,
    column_name,
    convert,
    row_fields,
    row_plan,
    typed_array,
    variant_column,
    view_schema,
)

if TYPE_CHECKING:
    from spark_logsource.io.fs import FileEntry
    from spark_logsource.tarantool.format import TarantoolXlogFormat
    from spark_logsource.tarantool.replication_format import TarantoolReplicationFormat

__all__ = ["SNAPSHOT_OP", "SpaceView", "resolve_space", "wal_order"]

log = logging.getLogger(__name__)

BASE_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("op", pa.string()), ("lsn", pa.int64()), ("tsn", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("replica_id", pa.int32()), ("seq", pa.int64()),
)
TAIL_COLUMNS = ("ops", "extra_fields")
_CHANGE_TYPES = ("INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT")
#: ``op`` of the rows a stream started at a snapshot reads from the ``.snap`` (the tuples stored there).
SNAPSHOT_OP = "SNAPSHOT"


def wal_order(uri: str, space_ids: Sequence[int], common: Any, start: int = 0,
              end: int | None = None) -> dict[tuple[int, int], int]:
    """``(replica_id, lsn)`` → ``seq`` for the rows of ``space_ids`` in the blocks starting in ``[start, end)``.

    ``seq`` is the signature of the vclock after the row: the file's ``VClock:`` header (the vclock before its first
    row) followed over every row from the file's start, whatever its space, since each one raises the component of
    its replica to its LSN.  Done per batch with numpy: the raise of a row is its LSN minus the previous LSN of the
    same replica (the running vclock's component for the first one), and ``seq`` the running sum of the raises.
    """
    path = display_name(uri)
    vclock = dict(read_vclock(uri))
    signature = sum(vclock.values())
    options = XlogReadOptions(tuple_format="msgpack", common=dataclasses.replace(common, mode=ParseMode.PERMISSIVE))
    wanted = np.asarray(sorted(space_ids), dtype=np.int64)
    out: dict[tuple[int, int], int] = {}
    with open_input(uri) as source:
        for batch in iter_file_batches(source, path, start=0, end=end, options=options):
            lsn = batch.column("lsn")
            valid = lsn.is_valid()
            if not pc.any(valid).as_py():
                continue
            kept = batch.filter(valid)
            lsns = kept.column("lsn").to_numpy(zero_copy_only=False).astype(np.int64)
            replicas = kept.column("replica_id").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            order = np.argsort(replicas, kind="stable")
            r_sorted, l_sorted = replicas[order], lsns[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = r_sorted[1:] != r_sorted[:-1]
            previous = np.empty_like(l_sorted)
            previous[1:] = l_sorted[:-1]
            previous[first] = [vclock.get(int(r), 0) for r in r_sorted[first]]
            raises = np.empty_like(l_sorted)
            raises[order] = l_sorted - previous
            seqs = signature + np.cumsum(raises)
            last = np.ones(len(order), dtype=bool)
            last[:-1] = r_sorted[:-1] != r_sorted[1:]
            vclock.update(zip(r_sorted[last].tolist(), l_sorted[last].tolist(), strict=True))
            signature = int(seqs[-1])
            spaces = kept.column("space_id").fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            offsets = kept.column("offset").to_numpy(zero_copy_only=False)
            mine = np.isin(spaces, wanted) & (offsets >= start)
            out.update(zip(zip(replicas[mine].tolist(), lsns[mine].tolist(), strict=True), seqs[mine].tolist(),
                           strict=True))
    return out


def resolve_space(fmt: TarantoolXlogFormat, space: str) -> tuple[Catalog, SpaceHistory]:
    """The catalog of ``fmt``'s files and the history of the space named (or numbered) ``space``."""
    catalog = build_catalog(fmt.list_files(), fmt.common)
    sid = catalog.resolve(space)
    if sid is None or sid not in catalog.histories or not catalog.histories[sid].defined():
        # the user's spaces first: the system ones (named with a leading underscore) are rarely the one meant
        names = sorted(catalog.names(), key=lambda n: n.startswith("_"))
        known = ", ".join(names[:50]) or "none"
        where = ", ".join(display_name(p) for p in fmt.paths) or "the paths given"
        raise OptionError("space", f"no space {space!r} is defined in the snapshots and xlogs read in {where}; "
                                   f"spaces found: {known}")
    return catalog, catalog.histories[sid]


class _Rows:
    """Output rows of a typed view as column lists, turned into batches of the view's schema."""

    def __init__(self, schema: pa.Schema, columns: dict[str, pa.DataType | str]) -> None:
        self.schema = schema
        self.types = {f.name: (columns.get(f.name) or f.type) for f in schema}
        self.cols: dict[str, list[Any]] = {f.name: [] for f in schema}
        self.n = 0

    def add(self, values: dict[str, Any]) -> None:
        for name, col in self.cols.items():
            col.append(values.get(name))
        self.n += 1

    def batch(self) -> pa.RecordBatch:
        arrays = []
        for f in self.schema:
            t = self.types[f.name]
            if f.name in TAIL_COLUMNS:
                arrays.append(variant_column(self.cols[f.name]))
            else:
                arrays.append(typed_array(self.cols[f.name], t))
        self.cols = {f.name: [] for f in self.schema}
        self.n = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class TypedView:
    """What ``view=space`` and ``view=state`` share: the space they read and a schema fixed when they are built.

    Spark's pushed filters are not taken (``can_push`` is False): Spark applies them to the view's rows.
    """

    _schema: pa.Schema

    def __init__(self, fmt: TarantoolXlogFormat, space: str) -> None:
        self.fmt = fmt
        _catalog, self.history = resolve_space(fmt, space)
        self.space_id = self.history.space_id

    def schema(self) -> pa.Schema:
        return self._schema

    def can_push(self, predicate: Predicate) -> bool:
        return False


class SpaceView(TypedView):
    """The ``view=space`` part of a :class:`TarantoolXlogFormat` (built on the driver, pickled into tasks)."""

    def __init__(self, fmt: TarantoolXlogFormat, space: str) -> None:
        super().__init__(fmt, space)
        self._columns_of_history()

    @classmethod
    def of_history(cls, fmt: TarantoolXlogFormat | TarantoolReplicationFormat, history: SpaceHistory) -> SpaceView:
        """The view of a space whose definitions come from elsewhere than files (the live source: the server's
        ``_space`` and what its stream saw); the format gives only ``common`` and ``option_predicates``."""
        view = cls.__new__(cls)
        # a view built from a history never lists files: of the format it reads only the options both kinds have
        view.fmt = cast("TarantoolXlogFormat", fmt)
        view.history = history
        view.space_id = history.space_id
        view._columns_of_history()
        return view

    def _columns_of_history(self) -> None:
        fmt = self.fmt
        self.reserved = tuple(n for n, _ in BASE_COLUMNS) + TAIL_COLUMNS + (fmt.common.corrupt_column,)
        self.columns, self._schema = view_schema(
            self.history.defined(), self.reserved, head=[pa.field(n, t) for n, t in BASE_COLUMNS], tail=TAIL_COLUMNS,
            corrupt_column=fmt.common.corrupt_column_or_none)

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate]) -> list[Split]:
        xlogs = [f for f in files if file_key(f.uri)[1] == 1 and ".xlog" in f.uri.rsplit("/", 1)[-1]]
        return LogFormat.plan(self.fmt, prune_by_lsn(xlogs, self.fmt.option_predicates))

    def _raw_predicates(self) -> list[Predicate]:
        return [p for p in self.fmt.option_predicates if p.column != "space_id"]

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        yield from self.read_changes(split.uri, split.start, split.end)

    def read_changes(self, uri: str, start: int, end: int | None, *, history: SpaceHistory | None = None,
                     covered: Mapping[int, int] | None = None) -> Iterator[pa.RecordBatch]:
        """The changes of the blocks of xlog ``uri`` starting in ``[start, end)``, each named by ``history`` (the
        batch view's own by default; a stream passes the versions of its range).  Rows whose LSN ``covered`` (a
        snapshot's vclock) already holds are skipped (``table/stream.py``)."""
        spaces = (self.space_id, TRUNCATE_SPACE)
        seqs = wal_order(uri, spaces, self.fmt.common, start, end)
        rows = iter_rows(uri, spaces, self.fmt.common, self._raw_predicates(), start=start, end=end)
        yield from self.typed_batches(((row, seqs.get((row.replica_id or 0, row.lsn or 0))) for row in rows),
                                      self.history if history is None else history, covered)

    def typed_batches(self, rows: Iterable[tuple[LogRow, int | None]], history: SpaceHistory,
                      covered: Mapping[int, int] | None = None) -> Iterator[pa.RecordBatch]:
        """The view's batches of ``rows`` (rows of the space and of ``_truncate``, each with its ``seq``), each
        named by the version of ``history`` in force at its position."""
        out = _Rows(self._schema, self.columns)
        size = self.fmt.common.batch_size
        plans: dict[int, list[Any]] = {}  # id(SpaceDef) → its row plan
        for row, seq in rows:
            if covered and row.error is None and (row.lsn or 0) <= covered.get(row.replica_id or 0, 0):
                continue
            if row.error is not None:
                self._bad(out, row, row.error)
            elif row.space_id == TRUNCATE_SPACE:
                # a truncate writes the space's _truncate row; a drop deletes it (not a truncate)
                target = row.tuple if isinstance(row.tuple, list) else row.key
                if row.type != "DELETE" and isinstance(target, list) and target and target[0] == self.space_id:
                    out.add({"op": "TRUNCATE", "lsn": row.lsn, "tsn": row.tsn, "timestamp": row.timestamp,
                             "replica_id": row.replica_id, "seq": seq})
            elif row.type in _CHANGE_TYPES:
                try:
                    out.add(self._typed(row, plans, seq, history))
                except (FieldTypeError, CorruptDataError) as exc:
                    self._bad(out, row, CorruptDataError(row.path, row.offset, f"lsn {row.lsn}: {exc}"), seq)
            if out.n >= size:
                yield out.batch()
        if out.n:
            yield out.batch()

    def read_snapshot(self, uri: str, start: int, end: int | None, space: SpaceDef | None,
                      seq: int) -> Iterator[pa.RecordBatch]:
        """The space's tuples stored in the blocks of snapshot ``uri`` starting in ``[start, end)``, as rows of op
        :data:`SNAPSHOT_OP` named by ``space`` (the definition the snapshot holds), ``seq`` the snapshot's
        signature and ``lsn``, ``tsn``, ``timestamp``, ``replica_id`` null (a snapshot row is no change)."""
        history = SpaceHistory(self.space_id, [Version((-1, 0, 0, 0), 0, space)])
        out = _Rows(self._schema, self.columns)
        size = self.fmt.common.batch_size
        plans: dict[int, list[Any]] = {}
        for row in iter_rows(uri, (self.space_id,), self.fmt.common, start=start, end=end):
            if row.error is not None:
                self._bad(out, row, row.error, seq)
            elif row.type in ("INSERT", "REPLACE"):
                try:
                    values = self._typed(row, plans, seq, history)
                except (FieldTypeError, CorruptDataError) as exc:
                    row.type, row.lsn = SNAPSHOT_OP, None
                    self._bad(out, row, CorruptDataError(row.path, row.offset, f"snapshot row: {exc}"), seq)
                    continue
                values.update(op=SNAPSHOT_OP, lsn=None, tsn=None, timestamp=None, replica_id=None)
                out.add(values)
            if out.n >= size:
                yield out.batch()
        if out.n:
            yield out.batch()

    def _bad(self, out: _Rows, row: LogRow, error: CorruptDataError, seq: int | None = None) -> None:
        corrupt = self.fmt.common.corrupt_column

        def keep(e: CorruptDataError) -> None:
            out.add({"op": row.type, "lsn": row.lsn, "tsn": row.tsn, "timestamp": row.timestamp,
                     "replica_id": row.replica_id, "seq": seq, corrupt: str(e)})

        self.fmt.common.mode.handle(error, keep)

    def _typed(self, row: LogRow, plans: dict[int, list[Any]], seq: int | None,
               history: SpaceHistory) -> dict[str, Any]:
        space = history.at(row.position)
        if space is None:
            raise FieldTypeError(f"no format of space {self.space_id} is known at this point of the log")
        values: dict[str, Any] = {"op": row.type, "lsn": row.lsn, "tsn": row.tsn, "timestamp": row.timestamp,
                                  "replica_id": row.replica_id, "seq": seq}
        if row.type in ("UPDATE", "DELETE"):
            fields, extra = self.key_fields(space, row)
        else:
            if not isinstance(row.tuple, list):
                raise FieldTypeError("the row has no tuple")
            plan = plans.get(id(space))
            if plan is None:
                plan = plans[id(space)] = row_plan(space, self.columns, self.reserved)
            fields, extra = row_fields(row.tuple, space, self.columns, self.reserved, plan)
        values.update(fields)
        values["extra_fields"] = extra
        if row.type in ("UPDATE", "UPSERT"):
            values["ops"] = rebase_ops(row.ops, row.index_base)  # 1-based, as Lua's box API numbers fields
        return values

    def key_fields(self, space: SpaceDef, row: LogRow) -> tuple[dict[str, Any], list[Any] | None]:
        parts = space.index_parts(row.index_id or 0)
        if parts is None or not isinstance(row.key, list) or len(row.key) > len(parts):
            raise FieldTypeError(f"the key {row.key!r} does not match index {row.index_id or 0} of the space")
        out: dict[str, Any] = {}
        extra: list[Any] = []
        n = len(space.fields)
        for value, fno in zip(row.key, parts, strict=False):
            if fno < n:
                f = space.fields[fno]
                name = column_name(f.name, self.reserved)
                try:
                    out[name] = convert(value, f, self.columns[name])
                except FieldTypeError as exc:
                    raise FieldTypeError(f"key field {fno + 1} {f.name!r} ({f.type}): {exc}") from None
            else:
                extra.extend([None] * (fno - n + 1 - len(extra)))
                extra[fno - n] = value
        return out, (extra or None)
