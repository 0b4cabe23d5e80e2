"""``view=table``: the changes of one table as Debezium-style envelope rows with the table's own typed columns.

Columns (``docs/formats/mysql-typed.md``): ``op`` (``c`` / ``u`` / ``d``, ``t`` for a TRUNCATE), ``before`` and
``after`` (structs of every column the table ever had, typed by :mod:`.layout`), ``source`` (struct: file, pos,
row_index, timestamp, server_id, gtid, xid, database, table), ``seq`` (the order of the changes), and the
corrupt-record column in PERMISSIVE mode.

Where the column names and types come from (``schemaFrom``):

* ``binlog`` (default): the ``CREATE`` / ``ALTER`` / ``RENAME`` / ``DROP TABLE`` statements of the binlogs' QUERY
  events replayed in log order (:mod:`.ddl`), so each row is named by the layout in force where it was written;
* ``ddl:<path>``: a file of ``CREATE TABLE`` statements as the starting layout, then the binlogs' DDL on top;
* ``metadata``: each row's own TABLE_MAP (``binlog_row_metadata=FULL`` names, signedness, ENUM / SET names);
* ``mysql://user@host:port`` (with the ``password`` option): the server's ``SHOW CREATE TABLE`` now, for every
  row whose TABLE_MAP agrees with it (a row that does not is an error row, with a warning).

The history is built on the driver by one walk over the files' QUERY (and, for ``metadata``, TABLE_MAP)
events; the tasks read their splits with the same transaction machine as ``view=changes`` and look each rows
event up in it. A row that no layout can name — no layout known at that point, a column count or a column type
that disagrees with the TABLE_MAP, a value its column cannot hold — is a corrupt-record row (PERMISSIVE), a
logged skip (DROPMALFORMED) or an error (FAILFAST): never a guess.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import base_name, display_name, open_input
from spark_logsource.logformat import Split
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.binlog.splits import walk_split
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.rows import parse_rows_event
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.encode.runs import RowsRun
from spark_logsource.mysql.position import binlog_number
from spark_logsource.mysql.read.batches import MAX_BATCH_BYTES
from spark_logsource.mysql.read.filters import EventFilters
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.transactions import QUERY_TYPES, TABLE_MAP_CACHE_SIZE, TransactionMachine, warn_once
from spark_logsource.mysql.read.views import ViewWriter
from spark_logsource.mysql.stream.client import ReplicationClient, parse_uri
from spark_logsource.mysql.table.batch import (
    SEQ_TYPE,
    SOURCE_FIELDS,
    Columns,
    NotColumnWise,
)
from spark_logsource.mysql.table.batch import (
    image_columns as _image_columns,
)
from spark_logsource.mysql.table.batch import (
    typed_image as _typed_image,
)
from spark_logsource.mysql.table.ddl import (
    DDL_FILE,
    Catalog,
    DdlError,
    Position,
    TableHistory,
    Version,
    parse_ddl_file,
)
from spark_logsource.mysql.table.kernel import (
    TypedRows,
    TypedShape,
    compile_shape,
    kernel_available,
    typed_rows_event,
    typed_run,
)
from spark_logsource.mysql.table.layout import (
    ColumnSpec,
    Layout,
    ValueMismatch,
    cell_converter,
    compatible_binlog_type,
    enrich_table_map,
    spec_from_table_map,
    struct_type,
    union_columns,
)
from spark_logsource.mysql.table.options import TableOptions, parse_table_options
from spark_logsource.mysql.table.scan import MetadataLayouts, scan_files
from spark_logsource.mysql.table.statements import truncated_table

if TYPE_CHECKING:
    from spark_logsource.mysql.format import MysqlBinlogFormat

__all__ = ["SOURCE_FIELDS", "TableMachine", "TableView", "TableWriter", "parse_table_options", "seq_file_number"]

log = logging.getLogger(__name__)

_OPS = {"insert": "c", "update": "u", "delete": "d"}


# -- naming one rows event ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Naming:
    """How the rows of one TABLE_MAP are named: the map to decode them with and, per image key, the output
    column and the converter of its values."""

    table_map: TableMap
    cells: dict[str, tuple[str, Any]]  # image key → (union column name, converter)
    #: per TABLE_MAP column: the union column name, the declared column, the union column's type
    columns: tuple[tuple[str, ColumnSpec, pa.DataType | str], ...]
    #: the kernel's shapes of this naming, by present-columns bitmap (None: that shape takes the Python path)
    shapes: dict[int, TypedShape | None] = dataclasses.field(default_factory=dict)

    def shape(self, present: int) -> TypedShape | None:
        if present not in self.shapes:
            self.shapes[present] = compile_shape(self.columns, self.table_map, present)
        return self.shapes[present]


@dataclass(slots=True)
class _DecodedRows:
    """What the transaction machine buffers for a rows event of the table (it only reads ``n``)."""

    n: int
    rows: list[tuple[dict[str, Any] | None, dict[str, Any] | None]]
    naming: _Naming


class TableView:
    """The ``view=table`` part of a :class:`MysqlBinlogFormat`: built on the driver (the walk over the files'
    DDL), then pickled into the tasks."""

    def __init__(self, fmt: MysqlBinlogFormat, options: TableOptions) -> None:
        self.options = options
        self.read_options = dataclasses.replace(fmt.read_options, view="changes", include_query=False)
        self.common = fmt.common
        files = fmt.list_files()
        self.file_numbers = {f.uri: n for n, f in enumerate(files)}
        catalog = Catalog()
        if options.schema_from == "ddl":
            catalog = self._ddl_file(options.ddl_path or "", options.database)
        today = self._server_layout(options) if options.schema_from == "server" else None
        table_maps: MetadataLayouts | None = {} if options.schema_from == "metadata" else None
        scan_files(files, catalog, self.read_options, table_maps)
        name = f"{options.database}.{options.table}"
        history = catalog.resolve(options.database, options.table)
        if today is not None:
            # the names the table had come from the binlogs' DDL; every row is named by today's layout
            versions = history.versions if history is not None else [
                Version((DDL_FILE - 1, 0), options.database, options.table, None)]
            history = TableHistory([dataclasses.replace(v, layout=today, reason=None)
                                    if v.reason not in ("dropped", "replaced") else v for v in versions])
            layouts = [today]
        elif options.schema_from == "metadata":
            if history is None:  # no DDL in the binlogs: the table is its name
                history = TableHistory([Version((DDL_FILE - 1, 0), options.database, options.table, None)])
            layouts = [layout for (db, table), runs in (table_maps or {}).items() for pos, layout in runs
                       if layout is not None and self._name_at(history, pos) == (db, table)]
            if not layouts:
                raise OptionError("table", f"no TABLE_MAP of {name} with column names was read (the server must "
                                           "write binlog_row_metadata=FULL for schemaFrom=metadata; or use "
                                           "schemaFrom=binlog / ddl:<path>)")
        else:
            layouts = history.layouts() if history is not None else []
            if not layouts:
                hint = "" if options.schema_from == "ddl" else " (or name a file of them with schemaFrom=ddl:<path>)"
                raise OptionError("table", f"no CREATE TABLE {name} was found in the binlogs read{hint}; "
                                           "schemaFrom=metadata names rows from binlog_row_metadata=FULL")
        assert history is not None  # every branch above set it or raised
        self._build(history, layouts)

    @classmethod
    def from_history(cls, fmt: MysqlBinlogFormat, options: TableOptions, history: TableHistory,
                     layouts: Sequence[Layout]) -> TableView:
        """A view whose history and layouts were found elsewhere (a live server: :mod:`.follow`)."""
        view = cls.__new__(cls)
        view.options = options
        view.read_options = dataclasses.replace(fmt.read_options, view="changes", include_query=False)
        view.common = fmt.common
        view.file_numbers = {}
        view._build(history, layouts)
        return view

    def with_history(self, versions: Sequence[Version]) -> TableView:
        """This view naming rows by ``versions`` (a stream's slice carries the versions of its range)."""
        view = copy.copy(self)
        view.history = TableHistory(list(versions))
        return view

    def _build(self, history: TableHistory, layouts: Sequence[Layout]) -> None:
        self.history = history
        self.columns = union_columns(layouts)
        self.column_types = {n.lower(): (n, t) for n, t in self.columns}
        self.struct = struct_type(self.columns)
        self.source_type = pa.struct([pa.field(n, t) for n, t in SOURCE_FIELDS])
        fields = [pa.field("op", pa.string()), pa.field("before", self.struct), pa.field("after", self.struct),
                  pa.field("source", self.source_type), pa.field("seq", SEQ_TYPE)]
        corrupt = self.common.corrupt_column_or_none
        if corrupt is not None:
            if corrupt in ("op", "before", "after", "source", "seq"):
                raise OptionError("columnNameOfCorruptRecord", f"{corrupt!r} is already a column")
            fields.append(pa.field(corrupt, pa.string()))
        self._schema = pa.schema(fields)

    @staticmethod
    def _ddl_file(path: str, database: str) -> Catalog:
        try:
            with open_input(path) as f:
                text = f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise OptionError("schemaFrom", f"cannot read the DDL file {path!r}: {exc}") from None
        try:
            return parse_ddl_file(text, database)
        except DdlError as exc:
            raise OptionError("schemaFrom", f"the DDL file {path!r}: {exc}") from None

    @staticmethod
    def _server_layout(options: TableOptions) -> Layout:
        """The table's layout now, from the server's ``SHOW CREATE TABLE`` (driver only: the password stays here)."""
        settings = parse_uri(options.uri, options.password.reveal() if options.password else None)
        with ReplicationClient(settings).connect() as client:
            rows = client.query(f"SHOW CREATE TABLE `{options.database}`.`{options.table}`")
        try:
            catalog = parse_ddl_file(f"{rows[0][1]};", options.database)
        except (DdlError, IndexError) as exc:
            raise OptionError("schemaFrom", f"{settings.source}: cannot read SHOW CREATE TABLE: {exc}") from None
        history = catalog.resolve(options.database, options.table)
        layout = history.versions[-1].layout if history is not None else None
        if layout is None:
            reason = history.versions[-1].reason if history is not None else "no CREATE TABLE in its answer"
            raise OptionError("schemaFrom", f"{settings.source}: SHOW CREATE TABLE not understood: {reason}")
        return layout

    @staticmethod
    def _name_at(history: TableHistory, position: Position) -> tuple[str, str] | None:
        version = history.at(position)
        if version is None or (version.layout is None and version.reason in ("dropped", "replaced")):
            return None
        return version.database, version.table

    # -- LogFormat's parts -------------------------------------------------------------------------------------
    def schema(self) -> pa.Schema:
        return self._schema

    def can_push(self, predicate: Predicate) -> bool:
        return False

    def number_splits(self, splits: list[Split]) -> list[Split]:
        """Each split with the number of its file in log order (the history's positions use it)."""
        out = []
        for s in splits:
            number = self.file_numbers.get(s.uri)
            if number is None:
                raise OptionError("path", f"{s.uri} was not among the files the table's history was read from")
            out.append(dataclasses.replace(s, hints=(*s.hints, ("file_number", number))))
        return out

    def read_split(self, split: Split, options: BinlogReadOptions) -> Iterator[pa.RecordBatch]:
        path = display_name(split.uri)
        number = split.hint("file_number")
        if number is None:
            number = self.file_numbers[split.uri]
        options = dataclasses.replace(self.read_options, start_position=options.start_position,
                                      stop_position=options.stop_position)
        writer = TableWriter(self, path, options, number, seq_file_number(path, number))
        start, end = split.start, split.end
        with open_input(split.uri) as source:
            try:
                bf = BinlogFile(source, path, verify_checksums=options.common.verify_checksums)
            except CorruptDataError as exc:
                if start > 0:
                    return  # the split at the head reports it
                writer.bad(exc.offset, None, exc)
                yield from writer.emit()
                return
            try:
                if bf.is_gzip:
                    if start > 0:
                        return
                    end = None
                machine = TableMachine(bf.fde, options, writer, look_ahead=lambda pos: bf.events(pos))
                yield from walk_split(bf, start, end, machine)
            finally:
                bf.close()

    # -- naming --------------------------------------------------------------------------------------------------
    def name_at(self, position: Position) -> tuple[str, str] | None:
        return self._name_at(self.history, position)

    def naming(self, table_map: TableMap, position: Position, path: str, offset: int) -> _Naming:
        """How to decode and name the rows of ``table_map`` at ``position``; CorruptDataError when nothing can."""
        where = f"{table_map.database}.{table_map.table}"
        if self.options.schema_from == "metadata":
            try:
                layout = Layout(tuple(spec_from_table_map(c) for c in table_map.columns))
            except ValueMismatch as exc:
                raise CorruptDataError(path, offset, f"rows of {where}: {exc}") from None
            decode_with = table_map
        else:
            version = self.history.at(position)
            if version is None or version.layout is None:
                reason = version.reason if version is not None else "the table does not exist yet"
                raise CorruptDataError(path, offset, f"rows of {where}: no layout of the table is known at this "
                                                     f"point of the log ({reason})")
            layout = version.layout
            if len(layout.columns) != len(table_map.columns):
                if self.options.schema_from == "server":
                    warn_once(("server-layout", where), "%s: rows of %s have %d columns, the server's layout "
                              "today has %d: they are error rows", path, where, len(table_map.columns),
                              len(layout.columns))
                raise CorruptDataError(path, offset, f"rows of {where} have {len(table_map.columns)} columns, the "
                                                     f"layout in force has {len(layout.columns)} (a schema change "
                                                     "the DDL does not show?)")
            for spec, col in zip(layout.columns, table_map.columns, strict=True):
                if col.name is not None and col.name.lower() != spec.key:
                    raise CorruptDataError(path, offset, f"rows of {where}: column #{col.index + 1} is "
                                                         f"{col.name!r} in the TABLE_MAP, {spec.name!r} in the "
                                                         "layout in force")
                if not compatible_binlog_type(spec, col):
                    raise CorruptDataError(path, offset, f"rows of {where}: column {spec.name!r} is declared "
                                                         f"{spec.kind} but the binlog writes binlog type "
                                                         f"{col.real_type}")
            decode_with = enrich_table_map(table_map, layout)
        cells = {}
        columns = []
        for i, spec in enumerate(layout.columns):
            if spec.key not in self.column_types:  # a TABLE_MAP the driver's walk did not see (a skipped region)
                raise CorruptDataError(path, offset, f"rows of {where}: column {spec.name!r} is not in the view's "
                                                     "schema")
            name, column_type = self.column_types[spec.key]
            cells[decode_with.key_for(i)] = (name, cell_converter(spec, column_type))
            columns.append((name, spec, column_type))
        return _Naming(decode_with, cells, tuple(columns))


def seq_file_number(path: str, index: int) -> int:
    """The file number of ``seq``: the binlog's numeric suffix (``mysql-bin.000042`` → 42); a file not named like a
    binlog: its index in the files read."""
    number = binlog_number(base_name(path))[1]
    return number if number >= 0 else index


class TableMachine(TransactionMachine):
    """The changes view's transaction machine, decoding the table's rows with the layout in force; a TRUNCATE of
    the table is a row of its own."""

    view: TableWriter

    def process(self, ev: BinlogEvent, decoded_query: dict[str, Any] | None, inner: bool = False) -> None:
        if ev.type_code in QUERY_TYPES:
            decoded_query = decoded_query if decoded_query is not None else self.decode_query(ev)
            name = truncated_table(decoded_query["query"], decoded_query["schema"] or None)
            if name is not None:
                self.view.truncated(ev, name, self.gtid)
        super().process(ev, decoded_query, inner)

    def _decode_table_map(self, ev: BinlogEvent) -> TableMap:
        """As the changes view's, without its warning about rows keyed ``@1``: this view names them itself."""
        key = bytes(ev.body)
        table_map = self._table_map_cache.get(key)
        if table_map is None:
            try:
                table_map = parse_table_map(ev.body, table_id_size=self.table_id_size)
            except BinlogDecodeError as exc:
                raise exc.at(self.path, ev.pos + HEADER_LEN) from None
            if len(self._table_map_cache) >= TABLE_MAP_CACHE_SIZE:
                self._table_map_cache.clear()
            self._table_map_cache[key] = table_map
        return table_map

    def _encode_rows(self, ev: BinlogEvent) -> Any:
        table_map = self._table_map_of(ev)
        naming = self.view.naming_of(table_map, ev)
        if self.view.use_kernel:
            typed = typed_rows_event(ev.type_code, ev.body, post_header_len=self._rows_post_header[ev.type_code],
                                     table_id_size=self.table_id_size, table_map=naming.table_map,
                                     shape_of=naming.shape, path=self.path, offset=ev.pos,
                                     max_uncompressed=self.options.max_uncompressed)
            if typed is not None:
                return typed
        try:
            decoded = parse_rows_event(ev.type_code, ev.body, post_header_len=self._rows_post_header[ev.type_code],
                                       table_id_size=self.table_id_size,
                                       table_maps={table_map.table_id: naming.table_map},
                                       max_uncompressed=self.options.max_uncompressed)
        except BinlogDecodeError as exc:
            raise exc.at(self.path, ev.pos + HEADER_LEN) from None
        return _DecodedRows(len(decoded.rows), decoded.rows, naming)

    def _encode_run(self, ev: BinlogEvent, window: tuple[bytes, int], stop: int, crc_len: int, verify: bool,
                    max_rows: int, max_bytes: int) -> RowsRun | None:
        """The run that begins with ``ev``, its rows as the kernel's typed columns; None when the event is not the
        table's or not for the kernel (the per-event path then skips it, or reads it)."""
        if not self.view.use_kernel:
            return None
        try:
            table_map = self._table_map_of(ev)
            if not self.view.rows_wanted(ev, table_map, et.ROWS_EVENT_OPS[ev.type_code]):
                return None
            naming = self.view.naming_of(table_map, ev)
        except CorruptDataError:
            return None
        return typed_run(ev, window[0], window[1], stop, crc_len=crc_len, verify=verify,
                         table_id_size=self.table_id_size, post_header_len=self._rows_post_header[ev.type_code],
                         table_map=naming.table_map, shape_of=naming.shape, path=self.path, max_rows=max_rows,
                         max_bytes=max_bytes, map_body=self.table_map_bodies.get(table_map.table_id))


class TableWriter(ViewWriter):
    """The :class:`ViewWriter` of ``view=table``: the rows of the one table, named and typed."""

    def __init__(self, view: TableView, path: str, options: BinlogReadOptions, file_number: int,
                 seq_file: int) -> None:
        # not ViewWriter.__init__: its batch builder is the changes view's
        self.mode = options.common.mode
        self.events_view = False
        self.include_query = False
        self.filters = EventFilters(options, ())
        self.table_view = view
        self.file_number = file_number
        self.out_path = path
        self.batch_size = options.common.batch_size
        self.columns = Columns(view, path, seq_file)
        #: the compiled kernel converts rows events to typed columns (the Python path when it declines)
        self.use_kernel = kernel_available()
        self._namings: dict[tuple[int, Position | None], tuple[TableMap, _Naming]] = {}

    @property
    def path(self) -> str:
        return self.out_path

    def naming_of(self, table_map: TableMap, ev: BinlogEvent) -> _Naming:
        position = (self.file_number, ev.pos)
        version = None if self.table_view.options.schema_from == "metadata" else self.table_view.history.at(position)
        key = (id(table_map), None if version is None else version.position)
        cached = self._namings.get(key)
        if cached is None or cached[0] is not table_map:
            cached = (table_map, self.table_view.naming(table_map, position, self.path, ev.pos))
            self._namings[key] = cached
        return cached[1]

    def rows_wanted(self, ev: BinlogEvent, table_map: TableMap, op: str) -> bool:
        if self.table_view.name_at((self.file_number, ev.pos)) != (table_map.database, table_map.table):
            return False
        return self.filters.facts_ok(ev, et.event_type_name(ev.type_code), table_map.database, table_map.table, op)

    def change_values(self, ev: BinlogEvent, gtid: str | None, xid: int | None, table_map: TableMap, op: str,
                      statement: str | None) -> list[Any]:
        return [ev.pos, ev.timestamp, ev.server_id, gtid, xid, table_map.database, table_map.table, op]

    def run_values(self, run: RowsRun, gtid: str | None, xid: int | None, statement: str | None) -> list[Any]:
        """As :meth:`change_values`, for a run of rows events: the position, timestamp and server id of each event
        come with its rows (``TypedRows.events``)."""
        table_map = run.table_map
        return [None, None, None, gtid, xid, table_map.database, table_map.table, run.op]

    def changes(self, values: list[Any], rows: Any, xid: int | None = None, set_xid: bool = False) -> None:
        if set_xid:
            values[4] = xid
        pos, timestamp, server_id, gtid, xid, database, table, op = values
        if type(rows) is TypedRows and rows.events is not None:  # a run of rows events
            self.columns.add_kernel_run(_OPS[op], rows.events, rows.before, rows.after, (gtid, xid, database, table),
                                        rows.size)
            return
        source = (None, pos, None, timestamp, server_id, gtid, xid, database, table)
        if type(rows) is TypedRows:
            self.columns.add_kernel_event(_OPS[op], rows.n, rows.before, rows.after, source, rows.size)
            return
        try:
            # column by column: one converter call per value, no dict per row
            before, before_size = _image_columns([b for b, _a in rows.rows], rows.naming.cells)
            after, after_size = _image_columns([a for _b, a in rows.rows], rows.naming.cells)
        except (ValueMismatch, NotColumnWise):
            self._changes_row_by_row(source, rows, op)  # which row, and the others kept: as row by row gives them
            return
        self.columns.add_event(_OPS[op], len(rows.rows), before, after, source, before_size + after_size)

    def _changes_row_by_row(self, source: tuple[Any, ...], rows: Any, op: str) -> None:
        """The rows of a rows event one at a time: a row whose value its column cannot hold is a bad row."""
        cells = rows.naming.cells
        database, table = source[7], source[8]
        for index, (before, after) in enumerate(rows.rows):
            row_source = (*source[:2], index, *source[3:])
            try:
                old, old_size = _typed_image(before, cells) if before is not None else (None, 0)
                new, new_size = _typed_image(after, cells) if after is not None else (None, 0)
            except ValueMismatch as exc:
                error = CorruptDataError(self.path, source[1], f"row {index} of {database}.{table}: {exc}")

                def keep(e: CorruptDataError, s: tuple[Any, ...] = row_source) -> None:
                    self.columns.add(None, None, None, s, str(e))

                self.mode.handle(error, keep)
                continue
            self.columns.add(_OPS[op], old, new, row_source, None, old_size + new_size)

    def truncated(self, ev: BinlogEvent, name: tuple[str, str], gtid: str | None) -> None:
        """A ``TRUNCATE`` of ``name`` at ``ev``: an ``op = 't'`` row when it is this table there."""
        if self.table_view.name_at((self.file_number, ev.pos)) == name:
            self.columns.add("t", None, None, (None, ev.pos, 0, ev.timestamp, ev.server_id, gtid, None, *name), None)

    def bad(self, pos: int | None, next_pos: int | None, error: CorruptDataError) -> None:
        self.mode.handle(error, lambda e: self.columns.add(None, None, None, (None, pos) + (None,) * 7, str(e)))

    def full(self) -> bool:
        return self.columns.n >= self.batch_size or self.columns.bytes >= MAX_BATCH_BYTES

    def run_room(self) -> int | None:
        """The rows left before the batch is full: a run stops there, as the walk checks :meth:`full` after each
        event (the batches are cut where the per-event path cuts them)."""
        return self.batch_size - self.columns.n

    def emit(self, final: bool = True) -> Iterator[pa.RecordBatch]:
        """The rows gathered so far, in batches of at most ``batchSize``; they are always emitted, whatever
        ``final`` (the split walk's hint that more rows may follow)."""
        if self.columns.n:
            batch = self.columns.batch()
            for offset in range(0, len(batch), self.batch_size):  # a rows event may hold more than a batch
                yield batch.slice(offset, self.batch_size)
