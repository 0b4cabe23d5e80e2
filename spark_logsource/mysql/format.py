"""The ``mysql-binlog`` format: options (mysqlbinlog's filters), file selection, split planning and reading.

Options (case-insensitive; the views: ``docs/formats/mysql-binlog.md`` "Output views"): ``view`` changes|events|table,
``rowFormat`` variant|json, ``startPosition`` (first file only) / ``stopPosition`` (last file only),
``startDatetime`` / ``stopDatetime`` (ISO 8601; without an offset they are UTC), ``serverId``, ``databases``,
``tables`` (``db.table``, ``*`` wildcards), ``ops``, ``eventTypes`` (comma lists); plus the common ones (``mode``,
``columnNameOfCorruptRecord``, ``batchSize``, ``verifyChecksums``, ``maxPartitionBytes``, ``pathGlobFilter``,
``recursiveFileLookup``); ``includeQuery`` (default false, as Debezium's ``include.query``) fills the changes
view's ``query`` column with the statement of each row (repeated on every row it changed). A directory is read as
the binlogs in it: files starting with the binlog magic ``fe 62 69 6e`` or the gzip magic; index, relay-info and
other files are left out. Files are read in name order (binlog numbers sort as text). ``view=table`` with
``table`` (one ``db.table``) and ``schemaFrom`` (binlog|metadata|ddl:<path>|mysql://user@host:port with
``password``): one table's changes with its own typed columns (``docs/formats/mysql-typed.md``, :mod:`.table.rows`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import logging
from collections.abc import Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa

from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import FileEntry, base_name, display_name, list_files, locate, open_input
from spark_logsource.logformat import CliFlag, LogFormat, Split
from spark_logsource.mysql.binlog.event_types import EVENT_TYPE_NAMES
from spark_logsource.mysql.binlog.events import is_gzip
from spark_logsource.mysql.read.reader import BinlogReadOptions, binlog_schema, iter_file_batches
from spark_logsource.mysql.stream.options import parse_stream_options
from spark_logsource.mysql.table.options import TableOptions, parse_state_options, parse_table_options
from spark_logsource.options import OptionMap

if TYPE_CHECKING:
    from spark_logsource.mysql.table.rows import TableView
    from spark_logsource.streaming.stream import LogStream

log = logging.getLogger(__name__)

VIEWS = ("changes", "events")
ROW_FORMATS = ("variant", "json")
OPS = ("insert", "update", "delete")
BINLOG_MAGIC = b"\xfebin"
GZIP_MAGIC = b"\x1f\x8b"
_CAT_AND_FOLLOW = frozenset({"cat", "follow"})


def _event_types(opts: OptionMap) -> tuple[str, ...] | None:
    """``eventTypes``: names as the ``event_type`` column spells them (``WRITE_ROWS_V2``; ``_EVENT`` optional)."""
    names = opts.str_list("eventTypes")
    if not names:
        return None
    known = set(EVENT_TYPE_NAMES.values())
    out = []
    for name in names:
        canonical = name.strip().upper().removesuffix("_EVENT")
        if canonical not in known:
            close = difflib.get_close_matches(canonical, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise OptionError("eventTypes", f"unknown event type {name!r}{hint}")
        out.append(canonical)
    return tuple(out)


def _parse_datetime(opts: OptionMap, name: str) -> dt.datetime | None:
    text = opts.string(name)
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise OptionError(name, f"expected a date-time like 2024-05-01 13:00:00 (UTC) or with an offset, "
                                f"got {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


class MysqlBinlogFormat(LogFormat):
    name = "mysql-binlog"
    pushable_columns = frozenset({"server_id", "timestamp", "database", "table", "op", "event_type", "pos",
                                  "event_type_code"})
    # Command line: the filters of ``mysqlbinlog``; text output with row images as JSON
    # (docs/formats/mysql-binlog.md "Output views").
    cli_title = "mysql-binlog (like mysqlbinlog)"
    cli_flags: ClassVar[tuple[CliFlag, ...]] = (
        CliFlag("--start-position", "startPosition", type=int),
        CliFlag("--stop-position", "stopPosition", type=int),
        CliFlag("--start-datetime", "startDatetime"),
        CliFlag("--stop-datetime", "stopDatetime"),
        CliFlag("--server-id", "serverId", type=int, repeatable=True),
        CliFlag("--database", "databases", repeatable=True, commands=_CAT_AND_FOLLOW),
        CliFlag("--table", "tables", "db.table (wildcards allowed; repeatable)", repeatable=True,
                commands=_CAT_AND_FOLLOW),
        CliFlag("--view", "view", choices=VIEWS, commands=_CAT_AND_FOLLOW),
    )
    text_options = MappingProxyType({"rowFormat": "json"})
    json_text_columns = frozenset({"before", "after", "data"})

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        """The binlog magic ``fe 62 69 6e``, or gzip's (a compressed binlog is read whole)."""
        return head[:4] == BINLOG_MAGIC or head[:2] == GZIP_MAGIC

    def _parse_options(self, opts: OptionMap) -> None:
        self.view = opts.choice("view", (*VIEWS, "table", "state"), "changes")
        #: view=table (one table's typed rows, ``docs/formats/mysql-typed.md``): built on first use (reads the DDL)
        # ``password`` belongs to view=table's server schema source here; mysql-replication reads its own
        self.table_options = self._table_options(opts)
        #: view=state (the table's content as of a point, ``docs/formats/mysql-typed.md`` "view=state")
        self.state_options = parse_state_options(self.view, opts.string("asOf"),
                                                 opts.integer("statePartitions", None, minimum=1, maximum=4096))
        self._table_view: TableView | None = None
        self.row_format = opts.choice("rowFormat", ROW_FORMATS, "variant")
        self.start_position = opts.integer("startPosition", minimum=0)
        self.stop_position = opts.integer("stopPosition", minimum=0)
        server_ids = opts.int_list("serverId")
        ops = opts.str_list("ops")
        if ops:
            bad = [o for o in ops if o.lower() not in OPS]
            if bad:
                raise OptionError("ops", f"expected a comma list of {', '.join(OPS)}, got {bad[0]!r}")
        databases = opts.str_list("databases")
        tables = opts.str_list("tables")
        for t in tables or ():
            if "." not in t:
                raise OptionError("tables", f"expected db.table (wildcards allowed: shop.*), got {t!r}")
        self.read_options = BinlogReadOptions(
            view="changes" if self.view in ("table", "state") else self.view,
            row_format=self.row_format,
            common=self.common,
            start_datetime=_parse_datetime(opts, "startDatetime"),
            stop_datetime=_parse_datetime(opts, "stopDatetime"),
            server_ids=frozenset(server_ids) if server_ids else None,
            databases=tuple(databases) if databases else None,
            tables=tuple(tables) if tables else None,
            ops=tuple(o.lower() for o in ops) if ops else None,
            event_types=_event_types(opts),
            include_query=opts.boolean("includeQuery", False),
        )
        #: readStream options (accepted and ignored by batch reads): see :mod:`spark_logsource.mysql.stream.tail`.
        self.stream_options = parse_stream_options(opts)

    def _table_options(self, opts: OptionMap) -> TableOptions | None:
        """``view=table``'s options (None for the other views)."""
        return parse_table_options(self.view, opts.string("table"), opts.string("schemaFrom"),
                                   opts.string("password") if self.view in ("table", "state") else None)

    def stream(self) -> LogStream:  # a BinlogDirStream here; the replication format's subclass has its own
        """Tail the binlog directory (``readStream``): follows the server's ``.index`` order and rotation; with
        ``view=table``, the table's layout rides in the offsets (``docs/formats/mysql-typed.md`` "Streaming")."""
        if self.view == "state":
            raise OptionError("view", "view=state is a batch read (a table's content as of one point); a stream "
                                      "reads view=changes, view=events or view=table")
        from spark_logsource.mysql.stream.tail import BinlogDirStream

        return BinlogDirStream(self)

    def table_view(self) -> TableView:
        """The ``view=table`` reader (:mod:`.table.rows`), built once, on the driver."""
        if self._table_view is None:
            from spark_logsource.mysql.table.rows import TableView

            assert self.table_options is not None
            if self.view == "state":
                from spark_logsource.mysql.table.state import StateView

                self._table_view = StateView(self, self.table_options, *self.state_options)
            else:
                self._table_view = TableView(self, self.table_options)
        return self._table_view

    def can_push(self, predicate: Predicate) -> bool:
        if self.table_options is not None:
            return self.table_view().can_push(predicate)
        return super().can_push(predicate)

    def schema(self) -> pa.Schema:
        if self.table_options is not None:
            return self.table_view().schema()
        return binlog_schema(self.view, self.row_format, self.common.corrupt_column_or_none)

    def accept_file_name(self, name: str) -> bool:
        return not name.endswith((".index", ".info", ".state", ".pid", ".err", ".cnf", ".log"))

    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        """Named files as they are; files found in directories or by globs only when they look like binlogs."""
        paths = list(paths) if paths is not None else self.paths
        if not paths:
            raise OptionError("path", "no path given: use .load(path) or the paths argument")
        found: dict[str, FileEntry] = {}
        for path in paths:
            entries = list_files([path], accept_name=self.accept_file_name, glob_filter=self.common.path_glob_filter,
                                 recursive=self.common.recursive_file_lookup)
            named_file = len(entries) == 1 and entries[0].uri == path
            for entry in entries:
                if named_file or _looks_like_binlog(entry.uri):
                    found[entry.uri] = entry
        return sorted(found.values())

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        splits: list[Split] = []
        last = len(files) - 1
        for i, entry in enumerate(files):
            hints = []
            if i == 0 and self.start_position is not None:
                hints.append(("start_position", self.start_position))
            if i == last and self.stop_position is not None:
                hints.append(("stop_position", self.stop_position))
            if _is_gzipped(entry.uri):
                file_splits = [Split(entry.uri, 0, None, entry.size)]  # gzip: read whole, one task
            else:
                file_splits = super().plan([entry], predicates)
            splits.extend(dataclasses.replace(s, hints=tuple(hints)) for s in file_splits)
        if self.table_options is not None:
            return self.table_view().number_splits(splits)
        return splits

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        options = dataclasses.replace(self.read_options, start_position=split.hint("start_position"),
                                      stop_position=split.hint("stop_position"))
        if self.table_options is not None:
            yield from self.table_view().read_split(split, options)
            return
        with open_input(split.uri) as source:
            yield from iter_file_batches(source, display_name(split.uri), start=split.start, end=split.end,
                                         options=options,
                                         predicates=predicates)


def _is_gzipped(uri: str) -> bool:
    if base_name(uri).endswith(".gz"):
        return True
    try:
        with open_input(uri) as f:
            return is_gzip(f, uri)
    except OSError:
        return False  # the read reports it


def _looks_like_binlog(uri: str) -> bool:
    loc = locate(uri)
    try:
        with loc.fs.open_input_file(loc.inner) as f:
            head: bytes = f.read(4)
    except OSError as exc:
        log.warning("cannot read %s: %s", uri, exc)
        return False
    return head == BINLOG_MAGIC or head[:2] == GZIP_MAGIC
