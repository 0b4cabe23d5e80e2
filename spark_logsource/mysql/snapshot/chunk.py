"""One chunk of the snapshot (a task): its rows as of the plan's binlog position T, as ``view=table`` batches.

The task opens its own consistent snapshot, whose binlog position P is T or later, and reads the chunk's keys
``[lo, hi)`` in it (streamed, values as the server's text, :mod:`.values` turns them into the binlog decoder's
values). It then rolls the rows back from P to T: the table's changes in ``[T, P)`` (:mod:`.window`) are undone
in reverse order, for the keys inside the chunk — an insert removes its row, a delete puts its before-image back,
an update removes its after-image and puts its before-image back. Whenever the task runs, the result is the chunk
as of T; rows are given in key order, so a re-run gives the same rows with the same ``seq``. With the kernel built,
the rows are read and rolled back by the compiled path (:mod:`.fast`), the twin of the Python one here.
``docs/formats/mysql-snapshot.md`` describes the method and the columns.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

import spark_logsource.mysql.snapshot.fast as fast
from spark_logsource.arrow.columns import array_from_parts, string_column
from spark_logsource.errors import CorruptDataError, SourceError
from spark_logsource.mysql.position import binlog_number
from spark_logsource.mysql.snapshot.plan import Chunk, SnapshotPlan
from spark_logsource.mysql.snapshot.session import Session, open_session, quote
from spark_logsource.mysql.snapshot.values import Column, decoder, select_expression
from spark_logsource.mysql.snapshot.window import Change, read_window
from spark_logsource.mysql.stream.client import ConnectionSettings
from spark_logsource.mysql.table.batch import SOURCE_FIELDS
from spark_logsource.mysql.table.layout import ValueMismatch, cell_converter, struct_type, union_columns
from spark_logsource.options import ParseMode

__all__ = ["ROW_BITS", "read_chunk", "snapshot_schema"]

log = logging.getLogger(__name__)

Row = tuple[Any, ...]
#: ``seq`` = file number * 2**64 + pos * 2**32 + (chunk index << ROW_BITS | row within the chunk).
ROW_BITS = 24
SEQ_TYPE = pa.decimal128(38, 0)
#: Keys whose chunk membership the server tells, per statement (a window's changes on text keys).
_KEYS_PER_QUERY = 200


def snapshot_schema(view_columns: Sequence[tuple[str, pa.DataType | str]],
                    corrupt_column: str | None = None) -> pa.Schema:
    """``view=table``'s schema for these columns, with ``seq`` (``docs/formats/mysql-typed.md``)."""
    struct = struct_type(view_columns)
    fields = [pa.field("op", pa.string()), pa.field("before", struct), pa.field("after", struct),
              pa.field("source", pa.struct([pa.field(n, t) for n, t in SOURCE_FIELDS])), pa.field("seq", SEQ_TYPE)]
    if corrupt_column is not None:
        fields.append(pa.field(corrupt_column, pa.string()))
    return pa.schema(fields)


def _range(plan: SnapshotPlan, chunk: Chunk) -> tuple[str, list[Any]]:
    """The chunk's WHERE clause (row constructors: the key's own order, composite keys included)."""
    names = "(" + ", ".join(quote(plan.columns[i].spec.name) for i in plan.key) + ")"
    marks = "(" + ", ".join(["%s"] * len(plan.key)) + ")"
    clauses: list[str] = []
    params: list[Any] = []
    if chunk.lo is not None:
        clauses.append(f"{names} >= {marks}")
        params.extend(chunk.lo)
    if chunk.hi is not None:
        clauses.append(f"{names} < {marks}")
        params.extend(chunk.hi)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class _Rows:
    """The chunk's rows by primary key (a table without one: a multiset of whole rows)."""

    def __init__(self, key: tuple[int, ...]) -> None:
        self.key = key
        self.by_key: dict[Row, Row] = {}
        self.bag: Counter[Row] = Counter()

    def key_of(self, row: Row) -> Row:
        return tuple(row[i] for i in self.key)

    def add(self, row: Row) -> None:
        if self.key:
            self.by_key[self.key_of(row)] = row
        else:
            self.bag[row] += 1

    def undo(self, changes: list[Change], inside: Callable[[Row], bool]) -> None:
        """The changes taken back, last first, for the keys ``inside`` the chunk."""
        for before, after in reversed(changes):
            if self.key:
                if after is not None and inside(k := self.key_of(after)):
                    self.by_key.pop(k, None)
                if before is not None and inside(k := self.key_of(before)):
                    self.by_key[k] = before
            else:
                if after is not None and self.bag[after] > 0:
                    self.bag[after] -= 1
                if before is not None:
                    self.bag[before] += 1

    def ordered(self) -> list[Row]:
        """Key order (Python's, the same whatever the chunk's position); whole rows by their text without a key."""
        if self.key:
            return [self.by_key[k] for k in sorted(self.by_key)]
        return [row for row in sorted(self.bag.elements(), key=repr)]


def _membership(session: Session, plan: SnapshotPlan, chunk: Chunk, keys: set[Row]) -> Callable[[Row], bool]:
    """Whether a key lies in the chunk: compared in Python, or by the server when a key column has a collation."""
    columns = [plan.columns[i] for i in plan.key]
    convert = [decoder(c) for c in columns]
    lo = None if chunk.lo is None else tuple(f(v) for f, v in zip(convert, chunk.lo, strict=True))
    hi = None if chunk.hi is None else tuple(f(v) for f, v in zip(convert, chunk.hi, strict=True))
    if lo is None and hi is None:
        return lambda _key: True
    if not any(c.text for c in columns):
        return lambda key: (lo is None or key >= lo) and (hi is None or key < hi)
    inside = _server_membership(session, columns, lo, hi, sorted(keys, key=repr))
    return inside.__contains__


def _server_membership(session: Session, columns: list[Column], lo: Row | None, hi: Row | None,
                       keys: list[Row]) -> set[Row]:
    def row(_values: Row) -> str:
        parts = [f"CONVERT(%s USING {c.charset}) COLLATE {c.collation}" if c.text else "%s" for c in columns]
        return "(" + ", ".join(parts) + ")"

    out: set[Row] = set()
    for start in range(0, len(keys), _KEYS_PER_QUERY):
        part = keys[start:start + _KEYS_PER_QUERY]
        tests, params = [], []
        for key in part:
            conds = []
            if lo is not None:
                conds.append(f"{row(key)} >= {row(lo)}")
                params.extend([*key, *lo])
            if hi is not None:
                conds.append(f"{row(key)} < {row(hi)}")
                params.extend([*key, *hi])
            tests.append("(" + " AND ".join(conds) + ")")
        answers = session.query("SELECT " + ", ".join(tests), *params, doing="placing changed keys in the chunk")[0]
        out.update(key for key, yes in zip(part, answers, strict=True) if str(yes) == "1")
    return out


def read_chunk(settings: ConnectionSettings, plan: SnapshotPlan, chunk: Chunk, *,
               view_columns: Sequence[tuple[str, pa.DataType | str]] | None = None, schema: pa.Schema | None = None,
               batch_size: int = 8192, server_id: int | None = None, mode: ParseMode = ParseMode.FAILFAST,
               corrupt_column: str | None = None, verify_checksums: bool = True) -> Iterator[pa.RecordBatch]:
    """The rows of ``chunk`` as of the plan's position, ``op = 'r'``, in batches of ``schema``.

    ``view_columns`` are the view's columns (``TableView.columns``: names and types of every layout the table
    had; the plan's layout alone by default) and ``schema`` its schema (:func:`snapshot_schema` of them by
    default; ``seq`` and the corrupt-record column are filled when it has them). The binlog window is read as
    replica ``server_id`` (``plan.server_id_base + chunk.index`` by default: chunks read at once need distinct
    ids). A value its column cannot hold is an error row (PERMISSIVE, with ``corrupt_column``), skipped
    (DROPMALFORMED) or a :class:`CorruptDataError` (FAILFAST)."""
    columns = list(view_columns) if view_columns is not None else union_columns([plan.layout])
    schema = schema if schema is not None else snapshot_schema(columns, corrupt_column)
    rows = _Rows(plan.key)
    decoders = [decoder(c) for c in plan.columns]
    where, params = _range(plan, chunk) if plan.key else ("", [])
    order = (" ORDER BY " + ", ".join(quote(plan.columns[i].spec.name) for i in plan.key)) if plan.key else ""
    target = quote(plan.database) + "." + quote(plan.table)
    sql = f"SELECT {', '.join(select_expression(c) for c in plan.columns)} FROM {target}{where}{order}"
    out = _Output(settings, plan, chunk, columns, schema, mode, corrupt_column)
    with open_session(settings, plan.name) as session:
        file, pos = session.snapshot_position()
        if (binlog_number(file)[1], pos) < (plan.file_number, plan.pos):
            raise SourceError(settings.source, f"{file}:{pos}", f"chunk {chunk.index} of {plan.name}: the server's "
                                                                f"snapshot position is before the plan's "
                                                                f"{plan.position} (its binlogs were reset?)")
        # the window first (the read view is fixed already): the compiled path needs to know what it undoes
        changes: list[Change] = []
        inside: Callable[[Row], bool] = lambda _key: True  # noqa: E731 - no window, or one chunk holds the table
        if (file, pos) != (plan.file, plan.pos):
            changes = read_window(settings, plan, chunk, (file, pos),
                                  server_id if server_id is not None else plan.server_id_base + chunk.index,
                                  verify_checksums=verify_checksums)
            if plan.key:
                touched = {rows.key_of(r) for change in changes for r in change if r is not None}
                inside = _membership(session, plan, chunk, touched)
        table = _fast_table(session, plan, chunk, out, sql, params, changes, inside)
        if table is None:
            for raw in session.stream(sql, *params, doing=f"reading chunk {chunk.index}"):
                rows.add(tuple(None if v is None else d(v) for d, v in zip(decoders, raw, strict=True)))
            rows.undo(changes, inside)
        session.query("COMMIT")
    count = table.num_rows if table is not None else len(rows.by_key) + sum(rows.bag.values())
    if count >= 1 << ROW_BITS:
        raise SourceError(settings.source, plan.position, f"chunk {chunk.index} of {plan.name} has {count} "
                                                          f"rows, more than {1 << ROW_BITS}: plan more chunks")
    log.info("%s: chunk %d of %s: %d row(s) as of %s (read at %s:%d)", settings.source, chunk.index, plan.name,
             count, plan.position, file, pos)
    if table is not None:
        for start in range(0, count, batch_size):
            yield out.fast_batch(table.slice(start, batch_size), start)
        return
    ordered = rows.ordered()
    for start in range(0, len(ordered), batch_size):
        yield out.batch(ordered[start:start + batch_size], start)


def _fast_table(session: Session, plan: SnapshotPlan, chunk: Chunk, out: _Output, sql: str, params: list[Any],
                changes: list[Change], inside: Callable[[Row], bool]) -> pa.Table | None:
    """The chunk as of T by the compiled path (:mod:`.fast`), its ``after`` columns in key order; None when the
    Python path must read it (no kernel, no primary key, or a column or value the kernel leaves to Python)."""
    k = fast.kernel()
    if k is None or not plan.key:
        return None
    try:
        kinds = fast.text_kinds(plan.columns, [t for _name, t in out.view])
        net = _Rows(plan.key)  # the undo's net effect: the last change of each key decides it, whatever the chunk
        net.undo(changes, inside)
        touched = {net.key_of(r) for change in changes for r in change if r is not None}
        key_cells = [out.cells[i][1] for i in plan.key]
        try:
            removed = [tuple(f(v) for f, v in zip(key_cells, key, strict=True)) for key in touched if inside(key)]
            restored = out.table([net.by_key[key] for key in sorted(net.by_key)]) if net.by_key else None
        except ValueMismatch as exc:
            raise fast.Declined(f"a row of the binlog window: {exc}") from None
        nrows, parts = fast.read_columns(session, k, kinds, sql, params, f"reading chunk {chunk.index}")
    except fast.Declined as exc:
        log.info("%s: chunk %d of %s is read by the Python path: %s", session.settings.source, chunk.index,
                 plan.name, exc)
        return None
    table = out.columns_table(nrows, parts)
    names = [out.cells[i][0] for i in plan.key]
    return fast.roll_back(table, names, restored, removed, fast.ordered_by_server(plan.columns, plan.key))


class _Output:
    """Rows (decoded values in layout order) → record batches of the view's schema, by its one conversion."""

    def __init__(self, settings: ConnectionSettings, plan: SnapshotPlan, chunk: Chunk,
                 columns: Sequence[tuple[str, pa.DataType | str]], schema: pa.Schema, mode: ParseMode,
                 corrupt_column: str | None) -> None:
        self.plan = plan
        self.chunk = chunk
        self.schema = schema
        self.mode = mode
        self.corrupt = corrupt_column if corrupt_column in schema.names else None
        self.where = f"{settings.source}/{plan.file}"
        types = {name.lower(): (name, t) for name, t in columns}
        self.cells: list[tuple[str, Callable[[Any], Any]]] = []
        self.view: list[tuple[str, pa.DataType | str]] = []
        for spec in plan.layout.columns:
            if spec.key not in types:
                raise SourceError(settings.source, plan.position, f"{plan.name}: column {spec.name!r} is not in the "
                                                                  "view's columns")
            name, column_type = types[spec.key]
            self.cells.append((name, cell_converter(spec, column_type)))
            self.view.append((name, column_type))
        self.base = plan.file_number * 2**64 + plan.pos * 2**32 + (chunk.index << ROW_BITS)
        self.after = schema.field("after") if "after" in schema.names else pa.field("after", struct_type(columns))

    # -- the compiled path's tables (fast.py): the after struct's fields as columns --------------------------------
    def columns_table(self, n: int, parts: list[tuple[int, Any, Any, Any]]) -> pa.Table:
        """The kernel's column parts (layout order) as a table of the after struct's fields."""
        index = {name: i for i, (name, _convert) in enumerate(self.cells)}
        arrays = []
        for f in self.after.type:
            i = index.get(f.name)
            if i is None:
                arrays.append(pa.nulls(n, f.type))
                continue
            nulls, validity, data, offsets = parts[i]
            buffers = (nulls, None if validity is None else pa.py_buffer(validity), pa.py_buffer(data),
                       None if offsets is None else pa.py_buffer(offsets))
            arrays.append(array_from_parts(f.type, n, buffers))
        return pa.Table.from_arrays(arrays, schema=pa.schema(list(self.after.type)))

    def table(self, rows: list[Row]) -> pa.Table:
        """Decoded rows as a table of the after struct's fields (ValueMismatch: a value the view cannot hold)."""
        cells = [self._cells(row) for row in rows]
        return pa.Table.from_arrays([pa.array([c.get(f.name) for c in cells], f.type) for f in self.after.type],
                                    schema=pa.schema(list(self.after.type)))

    def fast_batch(self, table: pa.Table, first: int) -> pa.RecordBatch:
        """A batch of the schema from the compiled path's rows (no error rows: the kernel declines those)."""
        n = table.num_rows
        table = table.combine_chunks()
        plan = self.plan
        arrays: list[pa.Array] = []
        for field in self.schema:
            if field.name == "op":
                arrays.append(string_column("r", n))
            elif field.name == "after":
                children = [table.column(i).chunk(0) if table.column(i).num_chunks else pa.nulls(0, f.type)
                            for i, f in enumerate(field.type)]
                arrays.append(pa.StructArray.from_arrays(children, fields=list(field.type)))
            elif field.name == "source":
                values = {"file": plan.file, "pos": plan.pos, "server_id": plan.server_id, "gtid": plan.gtid,
                          "database": plan.database, "table": plan.table}
                arrays.append(fast.source_array(field, values, first, n))
            elif field.name == "seq":
                arrays.append(fast.seq_array(field.type, self.base, first, n))
            else:  # before, the corrupt-record column
                arrays.append(pa.nulls(n, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _cells(self, row: Row) -> dict[str, Any]:
        return {name: None if v is None else convert(v) for (name, convert), v in zip(self.cells, row, strict=True)}

    def batch(self, rows: list[Row], first: int) -> pa.RecordBatch:
        after: list[dict[str, Any] | None] = []
        errors: list[str | None] = []
        index: list[int] = []
        for i, row in enumerate(rows, first):
            try:
                after.append(self._cells(row))
                errors.append(None)
                index.append(i)
            except ValueMismatch as exc:
                error = CorruptDataError(self.where, None, f"snapshot of {self.plan.name} at {self.plan.position}, "
                                                           f"chunk {self.chunk.index} row {i}: {exc}")

                def keep(e: CorruptDataError, at: int = i) -> None:
                    after.append(None)
                    errors.append(str(e))
                    index.append(at)

                self.mode.handle(error, keep if self.corrupt is not None else _raise)
        return self._arrays(after, errors, index)

    def _arrays(self, after: list[dict[str, Any] | None], errors: list[str | None], index: list[int]
                ) -> pa.RecordBatch:
        n = len(after)
        plan = self.plan
        arrays: list[pa.Array] = []
        for field in self.schema:
            if field.name == "op":
                arrays.append(pa.array([None if e is not None else "r" for e in errors], pa.string()))
            elif field.name == "before":
                arrays.append(pa.array([None] * n, field.type))
            elif field.name == "after":
                children = [pa.array([None if a is None else a.get(f.name) for a in after], f.type)
                            for f in field.type]
                mask = pa.array([a is None for a in after]) if any(a is None for a in after) else None
                arrays.append(pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask))
            elif field.name == "source":
                values = {"file": [plan.file] * n, "pos": [plan.pos] * n, "row_index": index,
                          "server_id": [plan.server_id] * n, "gtid": [plan.gtid] * n,
                          "database": [plan.database] * n, "table": [plan.table] * n}
                children = [pa.array(values.get(f.name, [None] * n), f.type) for f in field.type]
                arrays.append(pa.StructArray.from_arrays(children, fields=list(field.type)))
            elif field.name == "seq":
                arrays.append(pa.array([Decimal(self.base + i) for i in index], field.type))
            elif field.name == self.corrupt:
                arrays.append(pa.array(errors, pa.string()))
            else:
                arrays.append(pa.nulls(n, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _raise(error: CorruptDataError) -> None:
    raise error
