"""Tailing a Tarantool WAL directory: the ``tarantool-xlog`` format as a :class:`LogStream` (``docs/streaming.md``).

The instance writes ``<signature>.xlog`` files one after the other; the active one has its final name from the
start and no EOF marker until it is closed (rotation at ``wal_max_size``, ``box.snapshot()``, shutdown), and its
last block may be half written (``docs/formats/tarantool-xlog.md``). Old files are deleted by the checkpoint
garbage collector. The stream:

- finds the newest safe boundary (:meth:`TarantoolDirStream.latest_offset`) by listing the directory and walking
  fixheaders from the start position only: closed files in between are crossed by their successor's ``VClock:``
  header without reading them, and only the new blocks of the last file are read (their row headers give the
  vclock). The cost is the new data, never the files already passed;
- never ends a range inside a block: a half-written last block (or a bad one with nothing good after it yet)
  is left for later; a bad region followed by a good block is inside the range and the parse mode applies
  when it is read;
- cuts a range into one slice per file segment (and ``maxPartitionBytes`` pieces), each read on an executor
  with the batch reader restricted to exactly that byte range;
- awaits (with one log line) a position in an xlog named after every file there, while the newest xlog holds no
  row past its vclock: the collector deletes the oldest files first, so such a file was never written;
- reports data loss when a file it needs was collected: :class:`DataLossError` naming the vclock range, or with
  ``failOnDataLoss=false`` a warning and a jump to the oldest file still there.

Snapshots (``.snap``, ``.snap.inprogress``) and vinyl files are not part of the stream: the xlogs hold every
change; a snapshot only rotates the xlog, which the stream follows. (``view=space`` may start with the newest
snapshot's tuples: ``tarantool/table/stream.py``, a subclass of this stream.)
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import os
import posixpath
import re
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from spark_logsource.errors import CorruptDataError, OptionError, SourceError
from spark_logsource.filters import filter_batches
from spark_logsource.io.fs import FileEntry, PathNotFoundError, display_name, locate, open_input
from spark_logsource.options import OptionMap
from spark_logsource.streaming import dirtail
from spark_logsource.streaming.dirtail import (
    STREAM_OPTIONS,
    Awaiting,
    StreamOptions,
    Taken,
    data_loss,
    one_directory,
    past_end,
)
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, compare_positions, offset_json
from spark_logsource.tarantool.decode.rows import decode_payload
from spark_logsource.tarantool.position import (
    DirPosition,
    file_signature,
    parse_starting_position,
    same_vclock,
    vclock_rows,
    vclock_text,
)
from spark_logsource.tarantool.read.reader import iter_file_batches
from spark_logsource.tarantool.xlog.blocks import (
    EOF_MAGIC,
    FIXHEADER_SIZE,
    MAX_BLOCK_BYTES,
    BlockScanner,
    block_crc32c,
    decompress_block,
    parse_fixheader,
)
from spark_logsource.tarantool.xlog.meta import XlogMeta, read_meta

if TYPE_CHECKING:
    from spark_logsource.tarantool.format import TarantoolXlogFormat

log = logging.getLogger(__name__)

__all__ = ["STREAM_OPTIONS", "StreamOptions", "TarantoolDirStream", "XlogSlice", "parse_stream_options"]

#: A cached directory listing is trusted once read this long after the directory's last change (clock ticks).
_DIR_MTIME_MARGIN_S = 0.5


def parse_stream_options(opts: OptionMap) -> StreamOptions[str | DirPosition]:
    """``startingPosition`` (earliest | latest | snapshot | JSON offset), ``failOnDataLoss``, ``max*PerTrigger``.

    ``snapshot`` (the newest ``.snap``, then the xlogs after it) is taken by ``view=space`` only
    (``tarantool/table/stream.py``); the format refuses it for the other views.
    """
    return dirtail.parse_stream_options(opts, _parse_starting)


def _parse_starting(text: str | None) -> str | DirPosition:
    if text is not None and text.strip().lower() == "snapshot":
        return "snapshot"
    return parse_starting_position(text)


@dataclass(frozen=True, slots=True)
class XlogSlice:
    """Blocks of ``uri`` whose fixheader starts in ``[start, end)`` (``end`` None: to the end of a closed file).

    ``exact`` says ``start`` is a block boundary; ``size`` is where the file ends for this read (None: its real
    size, for closed files), so bytes written after planning are never read.
    """

    uri: str
    start: int
    end: int | None
    size: int | None
    exact: bool

    def __repr__(self) -> str:  # plan strings: no query string (it may hold credentials)
        return f"XlogSlice({display_name(self.uri)!r}, {self.start}, {self.end}, size={self.size})"


class TarantoolDirStream(LogStream):
    """A growing WAL directory as ranges of :class:`DirPosition` (see the module docstring)."""

    fmt: TarantoolXlogFormat

    def __init__(self, fmt: TarantoolXlogFormat) -> None:
        super().__init__(fmt)
        self.directory = one_directory(fmt.paths, "WAL directory")
        self.options: StreamOptions[str | DirPosition] = fmt.stream_options
        self._metas: dict[str, XlogMeta] = {}  # driver-side cache: xlog metas never change once written
        self._names_cache: tuple[int, float, list[str]] | None = None  # (dir mtime_ns, listed at, xlog names)
        self.awaiting = Awaiting()
        self.losses: set[str] = set()  # data losses already warned about (failOnDataLoss=false)
        self._written: tuple[str, DirPosition] | None = None  # how far the newest xlog was read while awaiting

    def __getstate__(self) -> dict[str, Any]:
        return {"fmt": self.fmt, "directory": self.directory, "options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._metas = {}
        self._names_cache = None
        self.losses = set()
        self._written = None

    # --- listing ------------------------------------------------------------------------------------------------
    def _list(self, since: str | None = None) -> list[FileEntry]:
        """The ``*.xlog`` files of the directory by signature, from ``since`` (a file name) on.

        Names are zero-padded signatures, so name order is signature order and files before ``since`` are
        dropped by a string comparison, before any stat: a position deep into a directory of thousands of
        files costs one directory read plus the files from there on (``.inprogress``, snapshots left out).
        """
        loc = locate(self.directory)
        floor = since or ""
        found: list[tuple[str, str, int]] = []
        if loc.scheme in ("", "file"):
            names = self._local_names(loc.inner)
            for name in names[bisect.bisect_left(names, floor):]:
                path = os.path.join(loc.inner, name)
                try:
                    found.append((name, path, os.stat(path).st_size))
                except FileNotFoundError:  # collected since listed
                    continue
        else:
            try:
                infos = loc.fs.get_file_info(pafs.FileSelector(loc.inner))
            except FileNotFoundError:
                raise PathNotFoundError(f"path does not exist: {self.directory}") from None
            found = [(i.base_name, i.path, i.size) for i in infos
                     if i.type == pafs.FileType.File and _is_xlog_name(i.base_name) and i.base_name >= floor]
        found.sort()
        files = [FileEntry(loc.uri_of(path), size) for _, path, size in found]
        if since is None:  # a full listing: forget the metas of collected files
            present = {e.uri for e in files}
            for uri in [u for u in self._metas if u not in present]:
                del self._metas[uri]
        return files

    def _local_names(self, directory: str) -> list[str]:
        """Sorted xlog names of a local directory, re-read only when the directory changed.

        Appending to the active xlog does not touch the directory; creating, renaming or deleting a file sets
        its mtime. The cached names are trusted only when they were read well after that mtime (a change in the
        same clock tick as the read would not move the mtime), so idle polls cost one ``stat``.
        """
        try:
            st = os.stat(directory)
        except FileNotFoundError:
            raise PathNotFoundError(f"path does not exist: {self.directory}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise OptionError("path", f"streaming reads a WAL directory; {self.directory} is not a directory")
        cached = self._names_cache
        if cached is not None and cached[0] == st.st_mtime_ns and cached[1] - st.st_mtime > _DIR_MTIME_MARGIN_S:
            return cached[2]
        listed_at = time.time()
        names = sorted(n for n in os.listdir(directory) if _is_xlog_name(n))
        self._names_cache = (st.st_mtime_ns, listed_at, names)
        return names

    def _meta(self, entry: FileEntry) -> XlogMeta | None:
        """The meta header of ``entry``, or None while it is still being written (or gone)."""
        meta = self._metas.get(entry.uri)
        if meta is not None:
            return meta
        try:
            with open_input(entry.uri) as source:
                meta = read_meta(source, display_name(entry.uri))
        except (FileNotFoundError, CorruptDataError) as exc:
            log.info("%s: meta header not readable yet: %s", display_name(entry.uri), exc)
            return None
        if meta.file_type != "XLOG":
            raise CorruptDataError(display_name(entry.uri), 0, f"a {meta.file_type} file named like an xlog")
        self._metas[entry.uri] = meta
        return meta

    def _check_instance(self, pos: DirPosition, meta: XlogMeta, entry: FileEntry) -> None:
        if pos.instance is not None and meta.instance_uuid is not None and meta.instance_uuid != pos.instance:
            raise SourceError(
                self.directory, offset_json(pos.to_offset()),
                f"{_name(entry.uri)} was written by instance {meta.instance_uuid}, not {pos.instance}: the directory "
                "now holds another instance's log; start a new query (new checkpoint) to read it",
            )

    def _at_start_of(self, entry: FileEntry, meta: XlogMeta) -> DirPosition:
        return DirPosition(meta.instance_uuid, _name(entry.uri), meta.data_offset, dict(meta.vclock))

    # --- driver -------------------------------------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        starting = self.options.starting
        if isinstance(starting, DirPosition):
            return starting.to_offset()
        files = self._list()
        readable = [(e, m) for e in files if (m := self._meta(e)) is not None] if starting == "earliest" else []
        if starting == "earliest":
            if not readable:
                return DirPosition(None, None, 0, {}).to_offset()
            return self._at_start_of(*readable[0]).to_offset()
        for entry in reversed(files):  # latest: the end of the newest readable file
            meta = self._meta(entry)
            if meta is not None:
                return self.latest_offset(self._at_start_of(entry, meta).to_offset(), ReadBudget())
        return DirPosition(None, None, 0, {}).to_offset()

    def default_budget(self) -> ReadBudget:
        return self.options.budget()

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        return compare_positions(DirPosition, a, b)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        asked = DirPosition.from_offset(start, "offset")
        files = self._list(asked.file)
        cur = self._resolve(asked, files)
        if cur is None or cur.file is None:
            return start
        for uri in [u for u in self._metas if _name(u) < cur.file]:  # files passed for good
            del self._metas[uri]
        names = [_name(e.uri) for e in files]
        taken = Taken(budget)
        while True:
            i = names.index(cur.file)
            entry = files[i]
            meta = self._meta(entry)
            if meta is None:
                return cur.to_offset()
            self._check_instance(cur, meta, entry)
            if cur.pos < meta.data_offset:  # a hand-written offset pointing into the meta header
                cur = dataclasses.replace(cur, pos=meta.data_offset)
            nxt = files[i + 1] if i + 1 < len(files) else None
            nxt_meta = self._meta(nxt) if nxt is not None else None
            if cur.pos > entry.size:
                if nxt is not None or _ends_with_eof(entry):  # finished: no block can ever start there
                    raise past_end(display_name(self.directory), cur.describe(), names[i], entry.size)
                self.awaiting.note(display_name(self.directory),
                                   f"{cur.file} to reach byte {cur.pos} (it has {entry.size} bytes)")
                return cur.to_offset()
            if nxt is None or nxt_meta is None:  # the active file (or its successor is not readable yet)
                return self._walk(entry, cur, taken, closed=False).to_offset()
            self._check_instance(cur, nxt_meta, nxt)
            self._check_continuity(cur, entry, meta, nxt, nxt_meta)
            rows = vclock_rows(nxt_meta.vclock, cur.vclock)
            nbytes = max(0, entry.size - cur.pos)
            has_data = rows > 0 or nbytes > len(EOF_MAGIC)
            if not has_data or taken.allows(rows, nbytes, new_file=not taken.current_file_counted,
                                            first_always=False):
                if has_data:
                    taken.add(rows, nbytes)
                cur = self._at_start_of(nxt, nxt_meta)
                taken.current_file_counted = False
                continue
            return self._walk(entry, cur, taken, closed=True).to_offset()

    def _resolve(self, cur: DirPosition, files: list[FileEntry]) -> DirPosition | None:
        """``cur``, or where reading goes on when its file was collected (data loss unless it was read whole)."""
        if not files:
            if cur.file is not None and not self._awaits_next(cur) and not self._checkpointed_at(cur):
                self._data_loss(cur, self._newest_snapshot_vclock(), f"{cur.file} is gone and no later xlog "
                                                                     "exists: those rows are in a snapshot only")
            return None
        if cur.file is None:
            first_meta = self._meta(files[0])
            return None if first_meta is None else self._at_start_of(files[0], first_meta)
        names = {_name(e.uri) for e in files}
        if cur.file in names:
            return cur
        later = [e for e in files if file_signature(_name(e.uri)) > cur.signature]
        if not later:
            if not self._checkpointed_at(cur):
                self._data_loss(cur, self._newest_snapshot_vclock(), f"{cur.file} is gone and no later xlog "
                                                                     "exists: those rows are in a snapshot only")
            return None
        nxt, nxt_meta = later[0], self._meta(later[0])
        if nxt_meta is None:
            return None  # try again once the next file's header is written
        self._check_instance(cur, nxt_meta, nxt)
        if not same_vclock(nxt_meta.vclock, cur.vclock):
            self._data_loss(cur, nxt_meta.vclock, f"{cur.file} was removed before it was read to its end")
        return self._at_start_of(nxt, nxt_meta)

    def _awaits_next(self, cur: DirPosition) -> bool:
        """True when ``cur`` names an xlog after every file there and it may still be written: awaited, said once.

        The collector deletes the oldest files first, so a file named after one still there was never written
        (not collected). It can still come when the newest xlog holds no row past ``cur``'s vclock (the instance
        opens its next xlog at the vclock its last row reached); when it does, ``cur`` can never come
        (SourceError). With no older xlog either, the caller decides between a checkpoint and data loss.
        """
        older = [e for e in self._list() if _name(e.uri) < (cur.file or "")]
        if not older:
            return False
        newest = older[-1]
        meta = self._meta(newest)
        if meta is None:
            return True  # its header is being written: look again at the next poll
        self._check_instance(cur, meta, newest)
        written = self._written_to(newest, meta).vclock
        if any(lsn > cur.vclock.get(r, 0) for r, lsn in written.items()):
            raise SourceError(display_name(self.directory), cur.describe(),
                              f"{cur.file} can never be written: {_name(newest.uri)}, the newest xlog, already "
                              f"holds rows up to vclock {vclock_text(written)}, past this position's vclock (a "
                              "position from another directory, or mistyped?)")
        self.awaiting.note(display_name(self.directory),
                           f"{cur.file} to be written (the newest xlog is {_name(newest.uri)}, with rows up to "
                           f"vclock {vclock_text(written)}; the position is at vclock {vclock_text(cur.vclock)})")
        return True

    def _written_to(self, entry: FileEntry, meta: XlogMeta) -> DirPosition:
        """The end of the complete blocks of ``entry`` (with its vclock), read on from the last look at it."""
        known = self._written
        cur = known[1] if known is not None and known[0] == entry.uri else self._at_start_of(entry, meta)
        if cur.pos < entry.size:
            cur = self._walk(entry, cur, Taken(ReadBudget()), closed=_ends_with_eof(entry))
        self._written = (entry.uri, cur)
        return cur

    def _newest_snapshot_vclock(self) -> dict[int, int] | None:
        """The vclock of the newest readable ``.snap`` (None: there is none): the end of rows whose xlogs are gone."""
        snaps = sorted((e for e in self.fmt.list_files() if display_name(e.uri).endswith(".snap")),
                       key=lambda e: posixpath.basename(display_name(e.uri)))
        for entry in reversed(snaps):
            try:
                with open_input(entry.uri) as source:
                    return dict(read_meta(source, display_name(entry.uri)).vclock)
            except (FileNotFoundError, CorruptDataError):
                continue
        return None

    def _checkpointed_at(self, cur: DirPosition) -> bool:
        """True when the instance wrote a snapshot exactly at ``cur``'s vclock.

        ``box.snapshot()`` closes the active xlog, and the checkpoint collector may then delete it; the next xlog is
        created only by the next write. Until then no xlog follows ``cur``, yet nothing after it was lost: the
        snapshot named by ``cur``'s signature (``docs/formats/tarantool-xlog.md``, file names) holding the same
        vclock proves no row was written after it. A later xlog then continues from that vclock.
        """
        name = f"{sum(cur.vclock.values()):020d}.snap"
        loc = locate(self.directory)
        try:
            with open_input(loc.uri_of(posixpath.join(loc.inner, name))) as source:
                meta = read_meta(source, name)
        except (FileNotFoundError, CorruptDataError):
            return False
        return meta.file_type == "SNAP" and same_vclock(meta.vclock, cur.vclock)

    def _check_continuity(self, cur: DirPosition, entry: FileEntry, meta: XlogMeta, nxt: FileEntry,
                          nxt_meta: XlogMeta) -> None:
        if nxt_meta.prev_vclock is not None and not same_vclock(nxt_meta.prev_vclock, meta.vclock):
            gone_from = DirPosition(cur.instance, _name(entry.uri), entry.size, dict(cur.vclock))
            self._data_loss(gone_from, nxt_meta.vclock,
                            f"an xlog between {_name(entry.uri)} and {_name(nxt.uri)} is missing")

    def _data_loss(self, at: DirPosition, upto: dict[int, int] | None, why: str) -> None:
        upto_text = "an unknown vclock" if upto is None else f"vclock {vclock_text(upto)}"
        missing = f"rows after vclock {vclock_text(at.vclock)} ({at.describe()}) up to {upto_text} ({why})"
        data_loss(self.directory, missing, fail=self.options.fail_on_data_loss, warned=self.losses)

    def _walk(self, entry: FileEntry, cur: DirPosition, taken: Taken, *, closed: bool) -> DirPosition:
        """Walk blocks of ``entry`` from ``cur`` while the budget allows; the boundary reached."""
        name = _name(entry.uri)
        size = entry.size
        pos = cur.pos
        vclock = dict(cur.vclock)
        try:
            source = open_input(entry.uri)
        except FileNotFoundError:
            return cur  # collected between listing and now: the next call sees it gone
        with source:
            scanner = BlockScanner(source, display_name(entry.uri), data_offset=pos, start=pos, size=size)
            window = scanner.window
            while pos < size:
                head = window.get(pos, FIXHEADER_SIZE)
                if head[:4] == EOF_MAGIC:
                    break
                block = _complete_block(window, pos, size)
                if block is None:  # not a complete good block: bad bytes, or a block still being written
                    sync = scanner.find_sync(pos + 1, size)
                    if sync is None and not closed:
                        break  # maybe half written: wait (a later good block or a newer file settles it)
                    region_end = size if sync is None else sync
                    if not taken.allows(0, region_end - pos, new_file=not taken.current_file_counted):
                        break
                    log.info("%s: bad bytes at %d..%d are inside the range (the parse mode applies)", name, pos,
                             region_end)
                    taken.add(0, region_end - pos)
                    pos = region_end
                    continue
                block_size, payload = block
                rows, lsns = _row_lsns(payload, display_name(entry.uri), pos)
                if not taken.allows(rows, block_size, new_file=not taken.current_file_counted):
                    break
                taken.add(rows, block_size)
                for replica, lsn in lsns.items():
                    if lsn > vclock.get(replica, 0):
                        vclock[replica] = lsn
                pos += block_size
        return DirPosition(cur.instance, name, pos, vclock)

    def plan(self, start: Offset, end: Offset) -> Sequence[XlogSlice]:
        s = DirPosition.from_offset(start, "offset")
        e = DirPosition.from_offset(end, "offset")
        if s.sort_key() >= e.sort_key() or e.file is None:
            return []
        files = self._list(s.file)
        resolved = self._resolve(s, files)
        if resolved is None:
            return []
        s = resolved
        if s.sort_key() >= e.sort_key():
            return []
        by_name = {_name(f.uri): f for f in files}
        if e.file not in by_name:
            gone = DirPosition(s.instance, e.file, 0, {})
            self._data_loss(gone, e.vclock, f"{e.file} was removed before it was read")
        step = self.fmt.common.max_partition_bytes
        slices: list[XlogSlice] = []
        for f in files:
            sig = file_signature(_name(f.uri))
            if sig < s.signature or sig > e.signature:
                continue
            is_last = _name(f.uri) == e.file
            lo = s.pos if _name(f.uri) == s.file else 0
            hi = e.pos if is_last else None
            if is_last and lo == 0:
                meta = self._meta(f)
                if meta is not None and hi is not None and hi <= meta.data_offset:
                    continue
            if hi is not None and lo >= hi:
                continue
            stop = hi if hi is not None else f.size
            cuts = list(range(lo, stop, step)) or [lo]
            for k, piece_start in enumerate(cuts):
                piece_end = cuts[k + 1] if k + 1 < len(cuts) else hi
                slices.append(XlogSlice(f.uri, piece_start, piece_end, hi, exact=k == 0))
        return slices

    # --- executors ----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: XlogSlice) -> Iterator[pa.RecordBatch]:
        path = display_name(slice_.uri)
        try:
            source = open_input(slice_.uri)
        except FileNotFoundError:
            missing = f"{path} from byte {slice_.start} (collected before this range was read)"
            data_loss(self.directory, missing, fail=self.options.fail_on_data_loss, then="skipping it")
            return
        with source:
            yield from filter_batches(
                iter_file_batches(source, path, start=slice_.start, end=slice_.end, options=self.fmt.read_options,
                                  exact_start=slice_.exact, size=slice_.size),
                self.fmt.option_predicates, self.fmt.common.corrupt_column_or_none)


_XLOG_NAME = re.compile(r"^\d{1,20}\.xlog$")


def _ends_with_eof(entry: FileEntry) -> bool:
    """Whether the xlog ends with its EOF marker (Tarantool closed it: it never grows again)."""
    if entry.size < len(EOF_MAGIC):
        return False
    try:
        with open_input(entry.uri) as f:
            f.seek(entry.size - len(EOF_MAGIC))
            tail: bytes = f.read(len(EOF_MAGIC))
            return tail == EOF_MAGIC
    except (FileNotFoundError, OSError):
        return False


def _is_xlog_name(name: str) -> bool:
    return _XLOG_NAME.match(name) is not None


def _name(uri: str) -> str:
    return posixpath.basename(display_name(uri))


def _complete_block(window: Any, pos: int, size: int) -> tuple[int, bytes] | None:
    """(framed size, decompressed payload) of a complete block whose checksum verifies at ``pos``, else None."""
    if size - pos < FIXHEADER_SIZE:
        return None
    try:
        fix = parse_fixheader(window.get(pos, FIXHEADER_SIZE))
    except ValueError:
        return None
    if fix.length > MAX_BLOCK_BYTES or pos + FIXHEADER_SIZE + fix.length > size:
        return None
    stored = window.get(pos + FIXHEADER_SIZE, fix.length)
    if len(stored) < fix.length or block_crc32c(stored) != fix.crc32c:
        return None
    if fix.compressed:
        try:
            stored = decompress_block(stored)
        except ValueError:
            return None
    return FIXHEADER_SIZE + fix.length, stored


def _row_lsns(payload: bytes, path: str, offset: int) -> tuple[int, dict[int, int]]:
    """Number of rows of a block and the largest LSN per vclock component (local rows count in component 0)."""
    try:
        cols = decode_payload(payload, "msgpack", path, offset)
    except CorruptDataError as exc:  # rows that do not decode: the parse mode deals with them when read
        log.info("%s", exc)
        return 0, {}
    lsns: dict[int, int] = {}
    for replica, lsn in zip(cols["replica_id"], cols["lsn"], strict=True):
        if lsn is None:
            continue
        r = replica or 0
        if lsn > lsns.get(r, 0):
            lsns[r] = lsn
    return len(cols["lsn"]), lsns

