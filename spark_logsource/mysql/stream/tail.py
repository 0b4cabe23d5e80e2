"""Tail a binlog directory as a :class:`~spark_logsource.streaming.stream.LogStream` (``readStream`` of
``mysql-binlog``; offsets in :mod:`.position`).

- Files are taken in the order of the server's ``*.index`` file (``mysql-bin.index``), or by name when the
  directory has none. Rotation appends a file to the index; a file followed by another is closed.
- :meth:`BinlogDirStream.latest_offset` walks event headers (:mod:`.boundaries`) from the start offset to the
  end of the last complete transaction; a partly written event or an open transaction at the tail is "not yet".
  A closed file whose FDE no longer has the in-use flag is taken whole without a walk (its end is a boundary).
- ``maxFilesPerTrigger`` counts files a range touches; ``maxBytesPerTrigger`` bytes; both are rounded up to the
  next transaction end, and a range always holds at least one transaction.
- A range ``[start, end)`` is planned as one slice per file; a slice reads the events whose position is in
  ``[start.pos, end.pos)`` with the batch reader's transaction machine, so the union of the slices of
  consecutive ranges equals the batch read of the same files, row for row.
- A needed file that is gone (``PURGE BINARY LOGS``, ``expire_logs_days``) raises
  :class:`~spark_logsource.errors.DataLossError` naming the missing range, unless ``failOnDataLoss=false``: then
  a warning, and reading goes on at the start of the oldest file still listed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from spark_logsource.errors import CorruptDataError, DataLossError, OptionError
from spark_logsource.io.fs import display_name, locate, open_input
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.boundaries import last_boundary
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.binlog.splits import walk_range
from spark_logsource.mysql.decode.gtid import decode_gtid_list
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.position import FILE_START, BinlogPosition, GtidState, binlog_number
from spark_logsource.mysql.read.transactions import TransactionMachine
from spark_logsource.mysql.read.views import ViewWriter
from spark_logsource.mysql.table.follow import DdlStatement, TableSlice
from spark_logsource.mysql.table.stream import file_statements, read_table_range, tail_follower
from spark_logsource.streaming.dirtail import Awaiting, data_loss, one_directory, past_end
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, compare_positions

if TYPE_CHECKING:
    from spark_logsource.mysql.format import MysqlBinlogFormat

__all__ = ["BinlogDirStream", "BinlogSlice"]

log = logging.getLogger(__name__)

_FDE_FLAGS_AT = 4 + 17
_FLAG_IN_USE = 0x01
_NOT_BINLOGS = (".index", ".info", ".state", ".pid", ".err", ".cnf", ".log", ".tmp", ".lock")
#: The offset's file before the first binlog: a stream started on a directory the server has not written to yet.
BEFORE_FIRST = ""


@dataclass(frozen=True, slots=True)
class BinlogFileEntry:
    """One binlog of the directory: its base name, URI and size at listing time."""

    name: str
    uri: str
    size: int


@dataclass(frozen=True, slots=True)
class BinlogSlice:
    """Events of ``uri`` whose position is in ``[start, stop)`` (``stop`` None: to the end of a closed file)."""

    uri: str
    name: str
    start: int
    stop: int | None

    def __repr__(self) -> str:  # plan strings: no query string (it may hold credentials)
        return f"BinlogSlice({display_name(self.uri)!r}, {self.start}, {self.stop})"


def _fde_identity(uri: str) -> tuple[str, int | None, bool] | None:
    """``(kind, server_id, in_use)`` from the file's FDE header, or None when it is not readable yet."""
    try:
        with open_input(uri) as f:
            head = bytes(f.read(4 + HEADER_LEN + 60))
    except OSError:
        return None
    if len(head) < 4 + HEADER_LEN + 52 or head[:4] != b"\xfebin" or head[8] != et.FORMAT_DESCRIPTION:
        return None
    server_id = int.from_bytes(head[9:13], "little")
    flags = int.from_bytes(head[_FDE_FLAGS_AT:_FDE_FLAGS_AT + 2], "little")
    version = head[4 + HEADER_LEN + 2:4 + HEADER_LEN + 52].split(b"\0", 1)[0].decode("ascii", "replace")
    kind = "mariadb" if "mariadb" in version.lower() else "mysql"
    return kind, server_id, bool(flags & _FLAG_IN_USE)


class BinlogDirStream(LogStream):
    """The binlogs of one server directory, read as ranges of transaction boundaries."""

    fmt: MysqlBinlogFormat

    def __init__(self, fmt: MysqlBinlogFormat) -> None:
        super().__init__(fmt)
        self.directory = one_directory(fmt.paths, "binlog directory").rstrip("/") or "/"
        self.options = fmt.stream_options
        self.read_options = dataclasses.replace(fmt.read_options, start_position=None, stop_position=None)
        self.losses: set[str] = set()  # data losses already warned about (failOnDataLoss=false)
        self.awaiting = Awaiting()
        #: view=table: the table's layout carried in the offsets (:mod:`spark_logsource.mysql.table.follow`)
        self.follower = tail_follower(fmt, display_name(self.directory)) if fmt.table_options is not None else None

    # -- listing ----------------------------------------------------------------------------------------------
    def _files(self) -> list[BinlogFileEntry]:
        """The binlogs in server order (the ``.index`` file, else by name), with their current sizes."""
        loc = locate(self.directory)
        try:
            infos = loc.fs.get_file_info(pafs.FileSelector(loc.inner, allow_not_found=False))
        except (OSError, FileNotFoundError) as exc:
            raise OptionError("path", f"cannot list the binlog directory {display_name(self.directory)}: "
                                      f"{exc}") from None
        files = {info.base_name: info for info in infos if info.type == pafs.FileType.File}
        indexes = sorted((n for n in files if n.endswith(".index") and "relay" not in n), key=len)
        names: list[str] | None = None
        for index in indexes:
            with loc.fs.open_input_stream(files[index].path) as f:
                text = f.read().decode("utf-8", "replace")
            listed = [line.strip().rsplit("/", 1)[-1] for line in text.splitlines() if line.strip()]
            if listed:
                names = listed
                break
        if names is None:
            names = sorted((n for n in files if not n.endswith(_NOT_BINLOGS)), key=binlog_number)
            names = [n for n in names if _fde_identity(loc.uri_of(files[n].path)) is not None
                     or files[n].size < 4 + HEADER_LEN + 60]
        out = []
        for name in names:
            info = files.get(name)
            if info is not None:
                out.append(BinlogFileEntry(name, loc.uri_of(info.path), info.size))
        return out

    # -- offsets ----------------------------------------------------------------------------------------------
    def _at_file_start(self, entry: BinlogFileEntry, gtid: str | None = None) -> BinlogPosition:
        identity = _fde_identity(entry.uri)
        kind, server_id = (identity[0], identity[1]) if identity else ("mariadb", None)
        if gtid is None:
            state = self._file_start_gtid(entry)
            gtid = state.text() or None if state is not None else None
        return BinlogPosition(kind, server_id, None, entry.name, FILE_START, gtid)

    def _file_start_gtid(self, entry: BinlogFileEntry) -> GtidState | None:
        """The MariaDB GTID state at the start of a file: its GTID_LIST event (None when it has none yet)."""
        try:
            with open_input(entry.uri) as f, BinlogFile(f, display_name(entry.uri), verify_checksums=False) as bf:
                for n, item in enumerate(bf.events()):
                    if n > 8 or not isinstance(item, BinlogEvent):  # a BadRange: no GTID_LIST at the head
                        return None
                    if item.type_code == et.MARIA_GTID_LIST:
                        return GtidState.of(decode_gtid_list(item.body)["gtids"])
        except (CorruptDataError, BinlogDecodeError, OSError):
            return None
        return None

    def initial_offset(self) -> Offset:
        starting = self.options.starting
        if starting.mode == "position":
            assert starting.position is not None
            return self._with_table(starting.position.to_offset())
        if starting.mode == "gtid":
            raise OptionError("startingPosition", "a GTID start needs the live source (mysql-replication); a "
                                                  "directory stream starts at earliest, latest or a file position")
        files = self._files()
        if not files:  # wait for the first binlog, as the Tarantool tailer and Spark's file source do
            return self._with_table(BinlogPosition("mariadb", None, None, BEFORE_FIRST, FILE_START).to_offset())
        first = self._at_file_start(files[0])
        if starting.mode == "earliest":
            return self._with_table(first.to_offset())
        return self.latest_offset(self._with_table(first.to_offset()), ReadBudget())

    def _with_table(self, offset: Offset) -> Offset:
        """``offset`` with the table's state there (view=table), from the history read when the query started."""
        if self.follower is None:
            return offset
        return self.follower.with_state(offset, self.follower.state_of(offset))

    def default_budget(self) -> ReadBudget:
        return self.options.budget()

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        return compare_positions(BinlogPosition, a, b)

    def _resolve(self, cur: BinlogPosition, files: list[BinlogFileEntry]) -> BinlogPosition | None:
        """``cur``, or where reading goes on when its file is gone (data loss, unless failOnDataLoss=false);
        None when its file is not there yet."""
        names = [e.name for e in files]
        if cur.file in names:
            return cur
        if cur.file == BEFORE_FIRST:  # started before any binlog: the first one, from its start
            return self._at_file_start(files[0]) if files else None
        if not files or binlog_number(cur.file) > binlog_number(files[-1].name):
            return None  # not written yet
        oldest = files[0]
        missing = f"{cur.describe()} up to the start of {oldest.name} (the oldest binlog in " \
                  f"{display_name(self.directory)})"
        self._data_loss(missing)
        return self._at_file_start(oldest)

    def _data_loss(self, missing: str) -> None:
        data_loss(display_name(self.directory), missing, fail=self.options.fail_on_data_loss, warned=self.losses)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        end = self._latest_position(start, budget)
        if self.follower is None:
            return end
        return self.follower.latest(start, end, self._statements, self._boundary_from(start))

    def _latest_position(self, start: Offset, budget: ReadBudget) -> Offset:
        files = self._files()
        wanted = BinlogPosition.from_offset(start)
        cur = self._resolve(wanted, files)
        if cur is None:
            newest = f"the newest there is {files[-1].name}" if files else "none is there yet"
            awaited = "the first binlog" if wanted.file == BEFORE_FIRST else wanted.file
            self.awaiting.note(display_name(self.directory), f"{awaited} to appear ({newest})")
            return start
        names = [e.name for e in files]
        taken_bytes = 0
        touched = 0
        i = names.index(cur.file)
        while True:
            entry = files[i]
            closed = i + 1 < len(files)
            if budget.max_files is not None and touched >= budget.max_files and taken_bytes:
                break
            identity = _fde_identity(entry.uri)
            if identity is None:
                break  # the file's head is not written yet
            kind, server_id, in_use = identity
            if cur.pos > entry.size:
                if closed or not in_use:
                    raise past_end(display_name(self.directory), cur.describe(), entry.name, entry.size)
                self.awaiting.note(display_name(self.directory), f"{entry.name} to reach byte {cur.pos} (it has "
                                                                 f"{entry.size} bytes)")
                break
            room = None if budget.max_bytes is None else max(budget.max_bytes - taken_bytes, 1)
            rest = entry.size - cur.pos
            if closed and not in_use and (room is None or rest <= room):
                gtid_state = self._file_start_gtid(files[i + 1])
                taken_bytes += max(rest, 0)
                touched += 1 if rest > 0 else 0
                cur = self._at_file_start(files[i + 1], gtid_state.text() or None if gtid_state else cur.gtid)
                i += 1
                continue
            try:
                with open_input(entry.uri) as f, BinlogFile(
                        f, display_name(entry.uri), verify_checksums=self.read_options.common.verify_checksums) as bf:
                    found = last_boundary(bf, cur.pos, GtidState.parse(cur.gtid), max_bytes=room)
            except CorruptDataError as exc:
                log.warning("%s: cannot walk the file yet: %s", display_name(entry.uri), exc)
                break
            if found.pos > cur.pos:
                taken_bytes += found.pos - cur.pos
                touched += 1
            gtid = found.gtid.text() or None
            cur = BinlogPosition(kind, server_id, None, entry.name, found.pos, gtid if kind == "mariadb" else None)
            budget_used = budget.max_bytes is not None and taken_bytes >= budget.max_bytes
            if closed and found.at_end and not budget_used:
                next_state = self._file_start_gtid(files[i + 1])
                cur = self._at_file_start(files[i + 1], next_state.text() or None if next_state else cur.gtid)
                i += 1
                continue
            break
        return cur.to_offset()

    # -- planning and reading ---------------------------------------------------------------------------------
    def plan(self, start: Offset, end: Offset) -> Sequence[BinlogSlice | TableSlice]:
        first = BinlogPosition.from_offset(start)
        last = BinlogPosition.from_offset(end)
        if (first.file, first.pos) == (last.file, last.pos):
            return []
        files = self._files()
        cur = self._resolve(first, files)
        if cur is None:
            raise DataLossError(display_name(self.directory), f"{first.describe()} (the file is not listed)")
        names = [e.name for e in files]
        if last.file not in names:
            self._data_loss(f"{last.file} (the end of the planned range) is gone")
            return []
        slices: list[BinlogSlice] = []
        for entry in files[names.index(cur.file):names.index(last.file) + 1]:
            begin = cur.pos if entry.name == cur.file else FILE_START
            stop = last.pos if entry.name == last.file else None
            if stop is not None and stop <= begin:
                continue
            slices.append(BinlogSlice(entry.uri, entry.name, begin, stop))
        if self.follower is not None and slices:
            versions = self.follower.versions(start, end, self._statements)
            return [TableSlice(s, versions) for s in slices]
        return slices

    # -- view=table: the DDL of a range -------------------------------------------------------------------------
    def _statements(self, first: BinlogPosition, last: BinlogPosition) -> list[DdlStatement]:
        """The DDL statements whose events are in ``[first, last)``, in log order."""
        files = self._files()
        names = [e.name for e in files]
        lo = names.index(first.file) if first.file in names else 0
        hi = names.index(last.file) if last.file in names else len(files) - 1
        out: list[DdlStatement] = []
        for entry in files[lo:hi + 1]:
            begin = first.pos if entry.name == first.file and first.pos > FILE_START else None
            stop = last.pos if entry.name == last.file else None
            out.extend(file_statements(entry.uri, entry.name, begin, stop, self.read_options))
        return out

    def _boundary_from(self, start: Offset) -> Callable[[str, int], Offset]:
        first = BinlogPosition.from_offset(start)

        def boundary(file: str, pos: int) -> Offset:
            """The offset of the boundary ``file:pos`` (with the GTID state there, walked from a known one)."""
            entry = next(e for e in self._files() if e.name == file)
            here = first if file == first.file else self._at_file_start(entry)
            found_gtid = here.gtid
            if pos > here.pos:
                with open_input(entry.uri) as f, BinlogFile(f, display_name(entry.uri), verify_checksums=False) as bf:
                    found = last_boundary(bf, here.pos, GtidState.parse(here.gtid), max_bytes=pos - here.pos)
                found_gtid = found.gtid.text() or None if found.pos == pos else None
            return here.moved(file, pos, found_gtid if here.kind == "mariadb" else None).to_offset()

        return boundary

    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        table = None
        if isinstance(slice_, TableSlice):
            table, slice_ = slice_, slice_.inner
        path = display_name(slice_.uri)
        try:
            source = open_input(slice_.uri)
        except FileNotFoundError:  # not any OSError: a storage failure (credentials, network) is no data loss
            self._data_loss(f"{slice_.name}:{slice_.start} (the file was removed before it was read)")
            return
        with source, BinlogFile(source, path, verify_checksums=self.read_options.common.verify_checksums) as bf:
            if table is not None:
                yield from read_table_range(self.fmt.table_view(), table.versions, bf, path, slice_.name,
                                            slice_.start, slice_.stop)
                return
            view = ViewWriter(path, self.read_options, ())
            machine = TransactionMachine(bf.fde, self.read_options, view, look_ahead=lambda pos: bf.events(pos))
            yield from walk_range(bf, slice_.start, slice_.stop, machine)
