"""``view=table`` in the two streams: where their DDL statements come from, and how a slice's rows are read.

- The directory tail (:mod:`spark_logsource.mysql.stream.tail`) reads the statements from the binlog files: a walk
  over QUERY and GTID event headers, the bodies of QUERY events only.
- The live source (:mod:`spark_logsource.mysql.replication_format`) dumps the range from the server as a replica
  (``serverId + 1024``) and decodes its QUERY events only, stepping over the others by their type byte. A user
  without REPLICATION SLAVE may not dump: then the server lists the events with ``SHOW BINLOG EVENTS IN 'file'
  FROM pos LIMIT n``, the statement text of QUERY events in ``Info`` (``use `db`; statement`` when the statement
  had a default database), which needs BINLOG MONITOR (MariaDB; MySQL: REPLICATION SLAVE).

``docs/formats/mysql-typed.md`` "Streaming" states the rules.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import AuthenticationError, OptionError
from spark_logsource.io.fs import base_name, display_name, open_input
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.binlog.splits import walk_range
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.query_event import parse_query
from spark_logsource.mysql.position import FILE_START, binlog_number
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.transactions import GROUP_TYPES, QUERY_TYPES
from spark_logsource.mysql.table.ddl import Catalog, TableHistory, Version
from spark_logsource.mysql.table.follow import SEED, DdlStatement, TableFollower, file_number, is_ddl_text, renumber
from spark_logsource.mysql.table.options import TableOptions

if TYPE_CHECKING:
    from spark_logsource.mysql.format import MysqlBinlogFormat
    from spark_logsource.mysql.stream.client import ReplicationClient
    from spark_logsource.mysql.table.rows import TableView, TableWriter

__all__ = ["file_statements", "live_statements", "live_table_view", "read_table_range", "table_writer",
           "tail_follower"]

log = logging.getLogger(__name__)

#: Rows of one ``SHOW BINLOG EVENTS`` page.
PAGE = 2000
_USE_RE = re.compile(r"use `((?:[^`]|``)*)`; (.*)", re.DOTALL)
_NO_CREATE = "no CREATE TABLE for it was read"


def _refuse_metadata(options: TableOptions) -> None:
    if options.schema_from == "metadata":
        raise OptionError("schemaFrom", "schemaFrom=metadata names each row by its own TABLE_MAP, so a stream "
                                        "cannot fix its schema when it starts: use binlog, ddl:<path> or a server")


# -- the directory tail ------------------------------------------------------------------------------------------
def tail_follower(fmt: MysqlBinlogFormat, source: str) -> TableFollower:
    """The follower of a directory stream: the batch view over the directory's binlogs (its union schema), its
    history renumbered by the binlogs' own numbers."""
    assert fmt.table_options is not None
    _refuse_metadata(fmt.table_options)
    view = fmt.table_view()
    numbers = [0] * len(view.file_numbers)
    for uri, n in view.file_numbers.items():
        numbers[n] = binlog_number(base_name(uri))[1]
    return TableFollower(view, renumber(view.history, numbers), source)


def file_statements(uri: str, name: str, begin: int | None, stop: int | None,
                    options: BinlogReadOptions) -> list[DdlStatement]:
    """The DDL statements of one binlog whose QUERY events are in ``[begin, stop)`` (None: its start / end)."""
    out: list[DdlStatement] = []
    path = display_name(uri)
    with open_input(uri) as f, BinlogFile(f, path, verify_checksums=options.common.verify_checksums) as bf:
        post_header = bf.fde.post_header_len(et.QUERY, 13)
        group: int | None = None
        for item in bf.events(begin, stop, only=frozenset(QUERY_TYPES) | frozenset(GROUP_TYPES)):
            if not isinstance(item, BinlogEvent):
                continue  # the tasks report bad bytes
            if item.type_code in GROUP_TYPES:
                group = item.pos
                continue
            try:
                q = parse_query(item.body, compressed=item.type_code == et.MARIA_QUERY_COMPRESSED,
                                post_header_len=post_header, max_uncompressed=options.max_uncompressed)
            except BinlogDecodeError as exc:
                log.warning("%s: a QUERY event the driver cannot read (the tasks report it): %s", path,
                            exc.at(path, item.pos + HEADER_LEN))
                group = None
                continue
            if is_ddl_text(q["query"]):
                out.append(DdlStatement(name, item.pos, group if group is not None else item.pos,
                                        q["schema"] or None, q["query"]))
            group = None
    return out


# -- the live source ---------------------------------------------------------------------------------------------
def live_statements(client: ReplicationClient, first: tuple[str, int], last: tuple[str, int] | None,
                    logs: Sequence[tuple[str, int]], server_id: int | None = None) -> list[DdlStatement]:
    """The DDL statements of the server's binlogs in ``[first, last)`` (``last`` None: to the end).

    With ``server_id``, read from a binlog dump of the range (:func:`dump_statements`), falling back to
    ``SHOW BINLOG EVENTS`` (:func:`shown_statements`) when the user may not dump (no REPLICATION SLAVE).
    """
    if server_id is not None:
        try:
            return dump_statements(client, first, last, logs, server_id)
        except AuthenticationError as exc:
            log.info("%s: the DDL of the range from SHOW BINLOG EVENTS: %s", client.settings.source, exc)
    return shown_statements(client, first, last, logs)


def dump_statements(client: ReplicationClient, first: tuple[str, int], last: tuple[str, int] | None,
                    logs: Sequence[tuple[str, int]], server_id: int) -> list[DdlStatement]:
    """The DDL statements in ``[first, last)`` from a dump of the range as replica ``server_id``: only the QUERY
    bodies are decoded; the other events are stepped over by their headers (the executors check their CRCs).

    A dump over loopback moves a binlog's bytes at memory speed, while ``SHOW BINLOG EVENTS`` makes the server
    describe, and the driver parse, a row for every event of the range. The dump has a connection of its own (a
    connection that dumped takes no more commands); ``client`` stays usable."""
    from spark_logsource.mysql.stream.client import ReplicationClient

    names = [n for n, _size in logs]
    if first[0] not in names:
        return []
    out: list[DdlStatement] = []
    group: int | None = None
    only = frozenset(QUERY_TYPES) | frozenset(GROUP_TYPES)
    stop_at = None if last is None else (binlog_number(last[0])[1], last[1])
    source = client.settings.source
    with ReplicationClient(client.settings, verify_checksums=client.verify_checksums) as dumper:
        for item in dumper.dump(first[0], max(first[1], FILE_START), server_id, only=only):
            ev = item.event
            if stop_at is not None and (binlog_number(item.file)[1], ev.pos) >= stop_at:
                break
            if ev.type_code in GROUP_TYPES:
                group = ev.pos
                continue
            try:
                q = parse_query(ev.body, compressed=ev.type_code == et.MARIA_QUERY_COMPRESSED,
                                post_header_len=item.fde.post_header_len(et.QUERY, 13))
            except BinlogDecodeError as exc:
                log.warning("%s/%s: a QUERY event the driver cannot read (the tasks report it): %s", source,
                            item.file, exc.at(f"{source}/{item.file}", ev.pos + HEADER_LEN))
                group = None
                continue
            if is_ddl_text(q["query"]):
                out.append(DdlStatement(item.file, ev.pos, group if group is not None else ev.pos,
                                        q["schema"] or None, q["query"]))
            group = None
    return out


def shown_statements(client: ReplicationClient, first: tuple[str, int], last: tuple[str, int] | None,
                     logs: Sequence[tuple[str, int]]) -> list[DdlStatement]:
    """The DDL statements of the server's binlogs in ``[first, last)`` (``last`` None: to the end), found with
    ``SHOW BINLOG EVENTS`` (the module docstring)."""
    names = [n for n, _size in logs]
    if first[0] not in names:
        return []
    hi = names.index(last[0]) if last is not None and last[0] in names else len(names) - 1
    out: list[DdlStatement] = []
    for name in names[names.index(first[0]):hi + 1]:
        pos = first[1] if name == first[0] else FILE_START
        stop = last[1] if last is not None and name == last[0] else None
        group: int | None = None
        skip = 0
        while stop is None or pos < stop:
            if skip:
                rows = client.query(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {skip}, {PAGE}", name)
            else:
                rows = client.query(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {PAGE}", name)
            done = len(rows) < PAGE
            for row in rows:
                at, kind, info = int(row[1]), str(row[2]), str(row[5] or "")
                if stop is not None and at >= stop:
                    done = True
                    break
                if kind in ("Gtid", "Anonymous_Gtid"):
                    group = at
                elif kind.startswith("Query"):
                    match = _USE_RE.match(info)
                    schema, query = (match.group(1).replace("``", "`"), match.group(2)) if match else (None, info)
                    if is_ddl_text(query):
                        out.append(DdlStatement(name, at, group if group is not None else at, schema, query))
                    group = None
            if done or not rows:
                break
            last_end = int(rows[-1][4] or 0)
            if last_end > pos and last_end > int(rows[-1][1]):
                pos, skip = last_end, 0
            else:  # an event without its end position: page on by count from the same start
                skip += PAGE
    return out


def live_table_view(fmt: MysqlBinlogFormat, client: ReplicationClient, server_id: int | None = None,
                    statements: Sequence[DdlStatement] | None = None) -> tuple[TableView, TableHistory]:
    """The view of a live source: the union of the layouts of the DDL in the binlogs the server still has and of
    the table's layout now (``SHOW CREATE TABLE``, on the server itself unless ``schemaFrom`` names another
    source); its history (positions: binlog numbers). ``statements``: the DDL of those binlogs, already walked
    (from the oldest to at least their end when it was asked); None: walked here."""
    from spark_logsource.mysql.table.rows import TableView

    options = fmt.table_options
    assert options is not None
    _refuse_metadata(options)
    if statements is None:
        logs = client.binary_logs()
        statements = live_statements(client, (logs[0][0], FILE_START), None, logs, server_id) if logs else []
    catalog = TableView._ddl_file(options.ddl_path or "", options.database) if options.schema_from == "ddl" \
        else Catalog()
    for st in statements:
        catalog.apply(st.query, st.schema, (file_number(st.file), st.pos))
    today = TableView._server_layout(options) if options.schema_from in ("server", "live") else None
    history = catalog.resolve(options.database, options.table)
    if history is None or all(v.layout is None and v.reason == _NO_CREATE for v in history.versions):
        # no layout in the binlogs the server still has: today's names every row (as schemaFrom=mysql:// does)
        versions = history.versions if history is not None else [
            Version(SEED, options.database, options.table, None, _NO_CREATE)]
        history = TableHistory([dataclasses.replace(v, layout=today, reason=None if today else v.reason)
                                for v in versions])
    layouts = history.layouts() + ([today] if today is not None else [])
    if not layouts:
        raise OptionError("table", f"no layout of {options.database}.{options.table} is known: no CREATE TABLE in "
                                   "the server's binlogs (name one with schemaFrom=ddl:<path> or a server)")
    return TableView.from_history(fmt, options, history, layouts), history


# -- the executors' side -----------------------------------------------------------------------------------------
def table_writer(view: TableView, versions: Sequence[Version], path: str, name: str) -> TableWriter:
    """The writer of a slice of binlog ``name``: rows named by ``versions``, ``seq`` numbered by the binlog."""
    from spark_logsource.mysql.table.rows import TableWriter

    number = file_number(name)
    return TableWriter(view.with_history(versions), path, view.read_options, number, number)


def read_table_range(view: TableView, versions: Sequence[Version], bf: BinlogFile, path: str, name: str,
                     start: int, stop: int | None) -> Iterator[pa.RecordBatch]:
    """The typed rows of the events of ``bf`` in ``[start, stop)`` (a directory stream's slice)."""
    from spark_logsource.mysql.table.rows import TableMachine

    writer = table_writer(view, versions, path, name)
    machine = TableMachine(bf.fde, view.read_options, writer, look_ahead=lambda pos: bf.events(pos))
    yield from walk_range(bf, start, stop, machine)


def machine_type() -> Any:
    """The transaction machine of ``view=table`` (imported late: the view imports the DDL parser)."""
    from spark_logsource.mysql.table.rows import TableMachine

    return TableMachine
