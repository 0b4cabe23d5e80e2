"""The ``mysql-replication`` format: a live MySQL / MariaDB server's binlogs, read as a replica would.

``spark.read`` reads ``[startingPosition, endingPosition)``; ``spark.readStream`` follows the server. Rows and
schema are exactly the ``mysql-binlog`` format's (same views, ``rowFormat``, ``includeQuery`` and filters), with
``file`` = ``mysql://host:port/<binlog name>`` and ``pos`` / ``next_pos`` as the file reader gives them.

Options: ``uri`` (``mysql://user@host:port``), ``password``, ``serverId`` (the first replica id this reader
uses: each partition of a batch takes ``serverId + i``, distinct from real replicas and from other readers),
``startingPosition`` (``earliest`` | ``latest`` | ``{"file": "mysql-bin.000042", "pos": 4}`` or a whole offset
| a MariaDB GTID state ``0-1-500``), ``endingPosition`` (batch: ``latest`` or a JSON position),
``failOnDataLoss``, ``maxFilesPerTrigger``, ``maxBytesPerTrigger``, ``heartbeatInterval`` (seconds), plus every
``mysql-binlog`` option. Planning asks the server (``SHOW MASTER STATUS``, ``SHOW BINARY LOGS``); each partition
is one binlog file's range, dumped by an executor with its own connection (:mod:`.client`). ``view=state`` (batch
only) replays the server's binlogs up to ``asOf`` (:class:`~spark_logsource.mysql.table.state.LiveStateView`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import (
    CorruptDataError,
    DataLossError,
    EncryptedBinlogError,
    OptionError,
    SourceError,
    UnavailableError,
)
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import FileEntry
from spark_logsource.logformat import Split
from spark_logsource.mysql.binlog.event_types import ROWS_TYPES
from spark_logsource.mysql.binlog.events import Resume
from spark_logsource.mysql.format import MysqlBinlogFormat
from spark_logsource.mysql.position import FILE_START, BinlogPosition, binlog_number, parse_starting_position
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.transactions import TransactionMachine
from spark_logsource.mysql.read.views import ViewWriter
from spark_logsource.mysql.stream.client import ConnectionSettings, DumpEvent, ReplicationClient, parse_uri
from spark_logsource.mysql.table.options import TableOptions, parse_table_options
from spark_logsource.mysql.table.slices import DdlStatement, TableSlice
from spark_logsource.net import Secret
from spark_logsource.options import OptionMap
from spark_logsource.streaming.dirtail import past_end
from spark_logsource.streaming.retry import RECONNECT_OPTION, parse_reconnect
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, compare_positions

if TYPE_CHECKING:
    from spark_logsource.mysql.table.ddl import TableHistory, Version
    from spark_logsource.mysql.table.follow import TableFollower
    from spark_logsource.mysql.table.rows import TableView

__all__ = ["LiveSlice", "MysqlReplicationFormat", "ReplicationStream", "read_live_slice"]

log = logging.getLogger(__name__)

LIVE_OPTIONS = ("uri", "password", "serverId", "endingPosition", "heartbeatInterval", "connectTimeout",
                RECONNECT_OPTION)
DEFAULT_SERVER_ID = 4_200_000_000
#: The driver's own dump, which finds the DDL statements of a range (view=table), registers as ``serverId + 1024``:
#: apart from the slices' ``serverId + i`` and the snapshot chunks' ``serverId + 512 + i``.
DDL_WALK_ID_OFFSET = 1024
#: A walk of the DDL statements of the server's binlogs: (from, to, its statements). It answers for any range inside
#: it: the binlogs do not change below a boundary already walked.
DdlWalk = tuple[tuple[str, int], tuple[str, int], list[DdlStatement]]


def other_server(source: str, where: str, was: tuple[str, int | None, str | None],
                 now: tuple[str, int, str | None]) -> SourceError:
    """The error for a server that answers in place of the one a position belongs to (a failover): binlog file
    positions are one server's own, so reading on would give another server's events at those offsets."""
    return SourceError(source, where, f"another server answers now (server_id {now[1]}, was {was[1]}): a binlog "
                                      "file position does not carry over to another server; start a new query "
                                      "from the GTID state of its last offset (startingPosition=gtid:...)")


@dataclass(frozen=True, slots=True)
class LiveSlice:
    """Events of binlog ``file`` from ``start`` (a transaction boundary) to ``stop``, dumped as replica
    ``server_id``."""

    file: str
    start: int
    stop: int
    server_id: int


def read_live_slice(settings: ConnectionSettings, slice_: LiveSlice, options: BinlogReadOptions,
                    predicates: Sequence[Predicate] = (), writer: ViewWriter | None = None,
                    machine_type: type[TransactionMachine] = TransactionMachine) -> Iterator[pa.RecordBatch]:
    """The batches of one slice: the same rows the file reader gives for ``[start, stop)`` of that file.

    A connection lost mid-slice (a server restart, a failover) is reopened for up to ``reconnectTimeout`` and the
    dump resumes at the event after the last one read, so each row is given once.
    """
    view = writer if writer is not None else ViewWriter(f"{settings.source}/{slice_.file}", options, predicates)
    machine: TransactionMachine | None = None
    reached = slice_.start >= slice_.stop
    resume = slice_.start  # the next event to read: where a reconnect resumes the dump
    # Events fed since ``resume`` that carry no position of their own (MariaDB 11.4+ writes log_pos 0 inside a
    # transaction): a dump resumed at ``resume`` sends them again, and they must not be fed twice.
    unpositioned = 0
    where = f"{slice_.file}:{slice_.start}"
    backoff = settings.reconnect.backoff()
    source_id: tuple[str, int, str | None] | None = None
    walked = Resume()  # the events after a run of rows events the kernel read from the dump's window
    verify = options.common.verify_checksums
    while not reached:
        try:
            with ReplicationClient(settings, verify_checksums=verify) as client:
                identity = client.identity()
                if source_id is None:
                    source_id = identity
                elif identity != source_id:
                    raise other_server(settings.source, f"{slice_.file}:{resume}", source_id, identity)
                skip = unpositioned
                walked.at = None
                for item in client.dump(slice_.file, resume, slice_.server_id, resume=walked):
                    if item.file != slice_.file:
                        reached = True  # the file ended (ROTATE): nothing of it is left
                        break
                    ev = item.event
                    if skip:
                        skip -= 1  # fed before the connection was lost
                        continue
                    where = f"{slice_.file}:{ev.next_pos}"
                    if ev.pos >= slice_.stop:
                        reached = True
                        break
                    if machine is None:
                        machine = machine_type(item.fde, options, view)
                    elif machine.fde is not item.fde:
                        machine.set_format(item.fde)
                    try:
                        end = _feed(machine, item, slice_.stop, verify)
                    except EncryptedBinlogError as exc:
                        view.bad(ev.pos, None, exc)
                        reached = True
                        break
                    walked.at = end if end != ev.next_pos else None
                    resume = end
                    unpositioned = 0 if ev.log_pos else unpositioned + 1
                    if backoff.tries:
                        backoff.succeeded()  # reading again: a later loss gets the whole timeout anew
                    if view.full():
                        yield from view.emit()
                    if end >= slice_.stop:
                        reached = True
                        break
        except UnavailableError as exc:
            backoff.failed(exc, f"reading {slice_.file}:{resume}")
            continue
        if not reached:
            raise SourceError(settings.source, where, f"the server ended the dump before {slice_.file}:"
                                                      f"{slice_.stop} (binlog purged or the server restarted "
                                                      "while reading?)")
    if machine is not None:
        machine.finish()
    yield from view.emit()


def _feed(machine: TransactionMachine, item: DumpEvent, stop: int, verify: bool) -> int:
    """Feed one event of the dump to ``machine``, or, for a rows event, the run of rows events of the same table
    and shape that follow it in the dump's window, read by the kernel as the file reader does
    (:meth:`~spark_logsource.mysql.read.transactions.TransactionMachine.rows_run`); the offset after what was read."""
    ev = item.event
    if item.window is not None and ev.type_code in ROWS_TYPES:
        try:
            run = machine.rows_run(ev, item.window, stop, item.crc_len, verify)
        except CorruptDataError:
            run = None  # feed() reports the event's error
        if run is not None:
            machine.prev_type = ev.type_code  # a rows event never starts a group: what feed() does, for the run
            return run.end
    machine.feed(ev)
    return ev.next_pos


def position_of(client: ReplicationClient, file: str, pos: int, gtid: str | None = None) -> BinlogPosition:
    """``file:pos`` of the server ``client`` is connected to, with its identity (and, on MariaDB, its GTID state)."""
    kind, server_id, uuid = client.identity()
    if gtid is None and kind == "mariadb":
        gtid = client.gtid_at(file, pos)
    return BinlogPosition(kind, server_id, uuid, file, pos, gtid)


class MysqlReplicationFormat(MysqlBinlogFormat):
    """Options, planning and reading of a live server (see the module docstring)."""

    name = "mysql-replication"
    uri_schemes = ("mysql", "mariadb")
    can_follow = True
    # Command line (``spark-logsource follow mysql://user@host:3306``): the binlog filters that apply to a live
    # server; ``serverId`` is this replica's id here, so mysqlbinlog's --server-id filter is not one of them.
    cli_title = "mysql-replication (a live server as a replica)"
    cli_flags = tuple(f for f in MysqlBinlogFormat.cli_flags if f.option in ("databases", "tables", "view"))

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        return False  # a server, never a file

    def __init__(self, options: Any = None) -> None:
        from spark_logsource.mysql.snapshot.stream import take_snapshot_start  # the SQL parser: not at import

        opts = dict(options or {})
        self.snapshot_start = take_snapshot_start(opts)  # startingPosition=snapshot: mysql/snapshot/stream.py
        if not any(opts.get(k) for k in opts if k.lower() in ("path", "paths")):
            opts["path"] = "live"  # no files: the base class wants a path
        super().__init__(opts)

    def _table_options(self, opts: OptionMap) -> TableOptions | None:
        """``view=table``: the layout comes by default from the server itself (its ``SHOW CREATE TABLE`` and the DDL
        in its binlogs, with this source's own account); ``password`` is this source's, also for another
        ``schemaFrom=mysql://`` server."""
        if self.view == "state":
            # replayed from the table's CREATE TABLE in the server's binlogs, which also give its layouts
            if opts.string("schemaFrom") is not None:
                raise OptionError("schemaFrom", "view=state on mysql-replication takes the table's layouts from the "
                                                "DDL in the server's binlogs, from its CREATE TABLE on")
            return parse_table_options("state", opts.string("table"), "binlog")
        if self.view != "table":
            return super()._table_options(opts)
        schema_from = opts.string("schemaFrom")
        if schema_from is None:
            options = parse_table_options("table", opts.string("table"), "binlog")
            assert options is not None
            return dataclasses.replace(options, schema_from="live", uri=opts.string("uri"),
                                       password=Secret(opts.string("password")))
        server = schema_from.strip().lower().startswith(("mysql://", "mariadb://"))
        return parse_table_options("table", opts.string("table"), schema_from,
                                   opts.string("password") if server else None)

    def _parse_options(self, opts: OptionMap) -> None:
        super()._parse_options(opts)
        self._table_history: TableHistory | None = None
        #: view=table: the DDL walk the table's schema was built from, and the server's end when it began, which
        #: ends a batch read with endingPosition=latest: its rows are the ones that schema names, even when a DDL
        #: lands between Spark's schema() and its read (the format, so its plan, is pickled from one to the other)
        self._ddl_walk: DdlWalk | None = None
        self._planned_end: Offset | None = None
        heartbeat = opts.seconds("heartbeatInterval", 1.0, minimum=0.05, maximum=3600)
        connect_timeout = opts.seconds("connectTimeout", 10.0, minimum=0, exclusive_minimum=True)
        self.settings = parse_uri(opts.string("uri"), opts.string("password"), heartbeat_period=heartbeat,
                                  connect_timeout=connect_timeout, reconnect=parse_reconnect(opts))
        self.server_id_base = opts.integer("serverId", DEFAULT_SERVER_ID, minimum=1, maximum=(1 << 32) - 1025)
        if self.view == "state":
            for name in ("startingPosition", "endingPosition"):
                if opts.string(name) is not None or (name == "startingPosition" and self.snapshot_start):
                    raise OptionError(name, "does not apply to view=state (the state is of every change up to "
                                            "asOf, from the oldest binlog the server has)")
        self.starting = parse_starting_position(opts.string("startingPosition"))
        ending = (opts.string("endingPosition") or "latest").strip()
        if ending.lower() == "latest":
            self.ending: BinlogPosition | None = None
        elif ending.startswith("{"):
            self.ending = BinlogPosition.from_offset(ending, option="endingPosition")
        else:
            raise OptionError("endingPosition", f"expected latest or a JSON position, got {ending!r}")
        # serverId is this replica's id here, not mysqlbinlog's --server-id event filter of mysql-binlog
        self.read_options = dataclasses.replace(self.read_options, server_ids=None)
        # a file's byte positions mean nothing on a server: the range is startingPosition / endingPosition
        for name, value in (("startPosition", self.start_position),
                            ("stopPosition", self.stop_position)):
            if value is not None:
                raise OptionError(name, "applies to binlog files; a live server's range is startingPosition / "
                                        "endingPosition")
        self.live_options = self.read_options
        from spark_logsource.mysql.snapshot.stream import parse_snapshot_options

        self.snapshot = parse_snapshot_options(opts, self.snapshot_start, self.view)

    def extra_allowed_options(self) -> Iterable[str]:
        return ("path",)

    def __repr__(self) -> str:
        return f"MysqlReplicationFormat({self.settings.source!r}, user={self.settings.user!r})"

    def client(self) -> ReplicationClient:
        return ReplicationClient(self.settings, verify_checksums=self.common.verify_checksums)

    def table_view(self) -> TableView:
        """The ``view=table`` reader of the server (:func:`~spark_logsource.mysql.table.stream.live_table_view`);
        with ``view=state``, the state's plan (:class:`~spark_logsource.mysql.table.state.LiveStateView`)."""
        if self._table_view is None and self.view == "state":
            from spark_logsource.mysql.table.state import LiveStateView

            def plan_state() -> LiveStateView:
                with self.client() as client:
                    return LiveStateView(self, client, self.server_id_base + DDL_WALK_ID_OFFSET)

            self._table_view = self.settings.reconnect.call(plan_state, "planning the table's state")
        if self._table_view is None:
            from spark_logsource.mysql.table.stream import live_statements, live_table_view

            def build() -> tuple[TableView, TableHistory, Offset, DdlWalk | None]:
                with self.client() as client:
                    file, pos, gtid = client.master_status()  # first: the walk below reaches at least this far
                    end = position_of(client, file, pos, gtid)
                    logs = client.binary_logs()
                    server_id = self.server_id_base + DDL_WALK_ID_OFFSET
                    found = live_statements(client, (logs[0][0], FILE_START), None, logs, server_id) if logs else []
                    view, history = live_table_view(self, client, server_id, found)
                walk = ((logs[0][0], FILE_START), (file, pos), found) if logs else None
                return view, history, end.to_offset(), walk

            self._table_view, self._table_history, self._planned_end, self._ddl_walk = self.settings.reconnect.call(
                build, "reading the table's DDL")
        return self._table_view

    def follower(self) -> TableFollower:
        from spark_logsource.mysql.table.follow import TableFollower

        view = self.table_view()
        assert self._table_history is not None
        return TableFollower(view, self._table_history, self.settings.source)

    # -- batch ------------------------------------------------------------------------------------------------
    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        return []

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        if self.snapshot is not None:
            raise OptionError("startingPosition", "snapshot starts a stream (readStream, follow), not a batch read")
        if self.view == "state":
            return self.table_view().number_splits([])
        stream = ReplicationStream(self)  # view=table: plans the table's view, once per format (table_view)
        start = stream.initial_offset()
        if self.ending is not None:
            end = self.ending.to_offset()
        elif self._planned_end is not None:
            end = self._planned_end  # where the walk that made the schema began: its rows are the ones it names
        else:
            end = stream.plain_latest(start, ReadBudget())
        splits = []
        for s in stream.plan(start, end):
            versions = s.versions if isinstance(s, TableSlice) else None
            s = s.inner if isinstance(s, TableSlice) else s
            splits.append(Split(f"{self.settings.source}/{s.file}", s.start, s.stop, s.stop,
                                hints=(("server_id", s.server_id), ("versions", versions))))
        return splits

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        if self.view == "state":
            # the driver's plan (its end, history and point) rides in the split: the task replays that plan
            from spark_logsource.mysql.table.state import LiveStateView

            view = split.hint("state")
            assert isinstance(view, LiveStateView)
            yield from view.read_live(split, self.settings, self.server_id_base)
            return
        file = split.uri.rsplit("/", 1)[-1]
        slice_ = LiveSlice(file, split.start, split.end if split.end is not None else split.file_size,
                           split.hint("server_id"))
        versions = split.hint("versions")
        if versions is not None:
            yield from self.read_table_slice(slice_, versions)
            return
        yield from read_live_slice(self.settings, slice_, self.live_options, predicates)

    def read_table_slice(self, slice_: LiveSlice, versions: Sequence[Version]) -> Iterator[pa.RecordBatch]:
        """The typed rows of ``view=table`` in a slice, named by the table's ``versions`` over its range."""
        from spark_logsource.mysql.table.stream import machine_type, table_writer

        view = self.table_view()
        writer = table_writer(view, versions, f"{self.settings.source}/{slice_.file}", slice_.file)
        yield from read_live_slice(self.settings, slice_, view.read_options, writer=writer,
                                   machine_type=machine_type())

    def stream(self) -> LogStream:
        if self.view == "state":
            raise OptionError("view", "view=state is a batch read (a table's content as of one point: spark.read); "
                                      "a stream of mysql-replication reads view=changes, view=events or view=table")
        live = ReplicationStream(self)
        if self.snapshot is None:
            return live
        from spark_logsource.mysql.snapshot.stream import SnapshotStream

        return SnapshotStream(self, live, self.snapshot)


class ReplicationStream(LogStream):
    """A live server's binlog as ranges of transaction boundaries; executors dump each range."""

    fmt: MysqlReplicationFormat

    def __init__(self, fmt: MysqlReplicationFormat) -> None:
        super().__init__(fmt)
        self.options = fmt.stream_options
        #: view=table: the table's layout carried in the offsets (:mod:`spark_logsource.mysql.table.follow`)
        self.follower = fmt.follower() if fmt.table_options is not None else None
        #: the last DDL walk, at first the one the table's view was built from: a range inside it is answered from
        #: it (``plan`` after ``latest_offset`` asks for the same range or a shorter one)
        self._ddl_walk: DdlWalk | None = fmt._ddl_walk

    def __repr__(self) -> str:
        return f"ReplicationStream({self.fmt.settings.source!r})"

    def _position(self, client: ReplicationClient, file: str, pos: int, gtid: str | None = None) -> BinlogPosition:
        return position_of(client, file, pos, gtid)

    def initial_offset(self) -> Offset:
        offset = self.fmt.settings.reconnect.call(self._initial_offset, "finding the starting position")
        if self.follower is not None:
            offset = self.follower.with_state(offset, self.follower.state_of(offset))
        return offset

    def _initial_offset(self) -> Offset:
        starting = self.fmt.starting
        if starting.mode == "position":
            assert starting.position is not None
            return starting.position.to_offset()
        with self.fmt.client() as client:
            if starting.mode == "latest":
                file, pos, gtid = client.master_status()
                return self._position(client, file, pos, gtid).to_offset()
            if starting.mode == "gtid":
                assert starting.gtid is not None
                file, pos = client.find_gtid_position(starting.gtid.text(), self.fmt.server_id_base)
                client.close()
            else:
                logs = client.binary_logs()
                if not logs:
                    raise SourceError(self.fmt.settings.source, None, "the server has no binary logs")
                file, pos = logs[0][0], FILE_START
        with self.fmt.client() as client:
            gtid = starting.gtid.text() if starting.mode == "gtid" and starting.gtid is not None else None
            return self._position(client, file, pos, gtid).to_offset()

    def default_budget(self) -> ReadBudget:
        return self.options.budget()

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        return compare_positions(BinlogPosition, a, b)

    def _resolve(self, cur: BinlogPosition, logs: list[tuple[str, int]]) -> BinlogPosition:
        names = [name for name, _size in logs]
        if cur.file in names:
            size = dict(logs)[cur.file]
            if cur.pos > size and cur.file != names[-1]:
                # a finished binlog: no event can ever start past its end
                raise past_end(self.fmt.settings.source, cur.describe(), cur.file, size)
            return cur
        if not logs:
            return cur
        if cur.file.rpartition(".")[0] != logs[-1][0].rpartition(".")[0]:
            raise SourceError(self.fmt.settings.source, cur.describe(),
                              f"the server has no binlog {cur.file}: its binlogs are {logs[0][0]} … {logs[-1][0]} "
                              "(a position of another server?)")
        if binlog_number(cur.file) > binlog_number(logs[-1][0]):
            # a live server always lists the file it writes: a newer name is another server's, or RESET MASTER
            raise SourceError(self.fmt.settings.source, cur.describe(),
                              f"the server's newest binlog is {logs[-1][0]}, older than this query's position "
                              "(its binlogs were reset, or this is another server)")
        missing = f"{cur.describe()} up to the start of {logs[0][0]} (the oldest binlog the server has)"
        if self.options.fail_on_data_loss:
            raise DataLossError(self.fmt.settings.source, missing)
        log.warning("%s: data loss: %s is no longer available; continuing from the oldest binlog "
                    "(failOnDataLoss=false)", self.fmt.settings.source, missing)
        return cur.moved(logs[0][0], FILE_START, None)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        end = self.plain_latest(start, budget)
        if self.follower is None:
            return end
        follower = self.follower
        return self.fmt.settings.reconnect.call(lambda: follower.latest(start, end, self._statements, self._boundary),
                                                "reading the DDL of the range")

    def plain_latest(self, start: Offset, budget: ReadBudget) -> Offset:
        """The newest boundary ``budget`` allows, whatever DDL comes before it."""
        return self.fmt.settings.reconnect.call(lambda: self._latest_offset(start, budget),
                                                "asking for the newest position")

    def _statements(self, first: BinlogPosition, last: BinlogPosition) -> list[DdlStatement]:
        def order(file: str, pos: int) -> tuple[int, int]:
            return binlog_number(file)[1], pos

        walk = self._ddl_walk
        lo, hi = order(first.file, first.pos), order(last.file, last.pos)
        if walk is not None and order(*walk[0]) <= lo and hi <= order(*walk[1]):
            # the binlogs do not change below a boundary already walked
            return [s for s in walk[2] if lo <= order(s.file, s.pos) < hi]
        from spark_logsource.mysql.table.stream import live_statements

        with self.fmt.client() as client:
            found = live_statements(client, (first.file, first.pos), (last.file, last.pos), client.binary_logs(),
                                    self.fmt.server_id_base + DDL_WALK_ID_OFFSET)
        self._ddl_walk = ((first.file, first.pos), (last.file, last.pos), found)
        return found

    def _boundary(self, file: str, pos: int) -> Offset:
        with self.fmt.client() as client:
            return self._position(client, file, pos).to_offset()

    def _latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        with self.fmt.client() as client:
            here = BinlogPosition.from_offset(start)
            identity = client.identity()
            if (here.server_id is not None and identity[1] != here.server_id) or \
                    (here.server_uuid is not None and identity[2] != here.server_uuid):
                raise other_server(self.fmt.settings.source, here.describe(),
                                   (here.kind, here.server_id, here.server_uuid), identity)
            logs = client.binary_logs()
            cur = self._resolve(here, logs)
            file, pos, gtid = client.master_status()
            names = [name for name, _size in logs]
            if cur.file not in names:
                return start
            sizes = dict(logs)
            end_file, end_pos = file, pos
            if not budget.unlimited:
                taken = touched = 0
                first = names.index(cur.file)
                for name in names[first:names.index(file) + 1] if file in names else []:
                    begin = cur.pos if name == cur.file else FILE_START
                    size = pos if name == file else sizes[name]
                    if size <= begin and name != file:
                        continue  # read to its end already: the range goes on in the next file
                    taken += max(size - begin, 0)
                    touched += 1
                    over_files = budget.max_files is not None and touched >= budget.max_files
                    over_bytes = budget.max_bytes is not None and taken >= budget.max_bytes
                    if (over_files or over_bytes) and name != file:
                        end_file, end_pos, gtid = name, size, None  # a file end is a transaction boundary
                        break
            if (end_file, end_pos) == (cur.file, cur.pos):
                return start
            if binlog_number(end_file) < binlog_number(cur.file) or (end_file == cur.file and end_pos < cur.pos):
                raise SourceError(self.fmt.settings.source, cur.describe(),
                                  f"the server's binlog ends at {end_file}:{end_pos}, before this query's position "
                                  "(a different server, or its binlogs were reset)")
            return self._position(client, end_file, end_pos, gtid).to_offset()

    def plan(self, start: Offset, end: Offset) -> Sequence[LiveSlice | TableSlice]:
        first, last = BinlogPosition.from_offset(start), BinlogPosition.from_offset(end)
        if (first.file, first.pos) == (last.file, last.pos):
            return []
        logs = self.fmt.settings.reconnect.call(self._binary_logs, "listing the binlogs")
        first = self._resolve(first, logs)
        names = [name for name, _size in logs]
        if last.file not in names:
            raise DataLossError(self.fmt.settings.source, f"{last.describe()} (the end of the planned range)")
        sizes = dict(logs)
        slices: list[LiveSlice] = []
        for i, name in enumerate(names[names.index(first.file):names.index(last.file) + 1]):
            begin = first.pos if name == first.file else FILE_START
            stop = last.pos if name == last.file else sizes[name]
            if stop > begin:
                slices.append(LiveSlice(name, begin, stop, self.fmt.server_id_base + i))
        if self.follower is not None and slices:
            versions = self.fmt.settings.reconnect.call(
                lambda: self.follower.versions(start, end, self._statements) if self.follower else (),
                "reading the DDL of the range")
            return [TableSlice(s, versions) for s in slices]
        return slices

    def _binary_logs(self) -> list[tuple[str, int]]:
        with self.fmt.client() as client:
            return client.binary_logs()

    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        if isinstance(slice_, TableSlice):
            yield from self.fmt.read_table_slice(slice_.inner, slice_.versions)
            return
        yield from read_live_slice(self.fmt.settings, slice_, self.fmt.live_options)
