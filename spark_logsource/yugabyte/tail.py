"""Tailing a YugabyteDB WAL directory: the ``yugabyte-wal`` format as a :class:`LogStream`.

Every tablet below the directory is followed on its own (``position.py``: per tablet, segment and byte offset of
the next entry batch). The stream:

- finds the newest boundary (:meth:`YugabyteWalStream.latest_offset`) by walking entry headers (and their CRCs)
  from each tablet's position: a closed segment is walked to its footer and the next segment is entered once its
  header is written; in the active segment the walk stops at the last complete batch (a half-written batch, or
  preallocated zeros, is left for later). A bad batch followed by good ones is inside the range, and the parse
  mode applies when it is read;
- plans one slice per tablet with new batches, holding exactly the byte ranges to read, so an executor never
  reads bytes written after planning;
- checks a position it did not reach itself once: a segment that can never come, or a byte past the end of a
  finished segment, is an error; the next segment, or a byte of the active segment not written yet, is awaited
  with one log line (``dirtail.Awaiting``);
- reports data loss when a tablet's segment it still needs was deleted (log GC): :class:`DataLossError`, or
  with ``failOnDataLoss=false`` a warning and a jump to the oldest segment still there.

Raft truncation in a stream: entries superseded within one range are dropped (unless ``includeSuperseded``);
an entry already emitted is not retracted when a later range supersedes it — the later entry, with the same
index and a higher term, says so.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, SourceError
from spark_logsource.filters import filter_batches
from spark_logsource.io.fs import FileEntry, display_name, list_files, open_input
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
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, compare_positions
from spark_logsource.yugabyte.messages import batch_op_ids
from spark_logsource.yugabyte.position import (
    TabletPosition,
    WalPosition,
    offset_of,
    parse_offset,
    parse_starting_position,
    segment_seqno,
)
from spark_logsource.yugabyte.reader import TabletRef, iter_tablet_batches, tablet_ids_from_path
from spark_logsource.yugabyte.segment import EntryScanner, RawBatch, SegmentInfo, open_segment

if TYPE_CHECKING:
    from spark_logsource.yugabyte.format import YugabyteWalFormat

log = logging.getLogger(__name__)

__all__ = ["STREAM_OPTIONS", "StreamOptions", "WalSlice", "YugabyteWalStream", "parse_stream_options"]

def parse_stream_options(opts: OptionMap) -> StreamOptions[str | dict[str, TabletPosition]]:
    """``startingPosition`` (earliest | latest | an offset's JSON text), ``failOnDataLoss``, ``max*PerTrigger``."""
    return dirtail.parse_stream_options(opts, parse_starting_position)


@dataclass(frozen=True, slots=True)
class WalSlice:
    """The new batches of one tablet: per segment ``(uri, size, start, end)``; ``start`` 0 = first entry."""

    key: str
    table_id: str | None
    tablet_id: str | None
    parts: tuple[tuple[str, int, int, int], ...]

    def __repr__(self) -> str:  # plan strings: file names only
        return f"WalSlice({self.key!r}, {[(posixpath.basename(display_name(u)), a, b) for u, _, a, b in self.parts]})"


@dataclass(frozen=True, slots=True)
class _Segment:
    seqno: int
    entry: FileEntry


class YugabyteWalStream(LogStream):
    """A growing WAL directory (one or many tablets) as ranges of per-tablet positions."""

    fmt: YugabyteWalFormat

    def __init__(self, fmt: YugabyteWalFormat) -> None:
        super().__init__(fmt)
        self.directory = display_name(one_directory(fmt.paths, "WAL directory")).rstrip("/")
        self.options: StreamOptions[str | dict[str, TabletPosition]] = fmt.stream_options
        self.losses: set[str] = set()  # data losses already warned about (failOnDataLoss=false)
        self._reset_checks()

    def _reset_checks(self) -> None:
        self.awaiting: dict[str, Awaiting] = {}  # per tablet: what a position not there yet waits for
        self._good: dict[str, tuple[int, int]] = {}  # per tablet: the last (seg, pos) known to be a real position
        self._written: dict[str, tuple[int, int]] = {}  # per tablet: (seg, end of its complete batches) seen so far

    # --- listing ------------------------------------------------------------------------------------------------
    def _tablets(self) -> dict[str, list[_Segment]]:
        """Segments by tablet key (folder relative to the directory), in sequence order, pruned by the options."""
        files = list_files([self.fmt.paths[0]], accept_name=self.fmt.accept_file_name, recursive=True,
                           warn_empty=False)
        groups: dict[str, list[_Segment]] = {}
        for tablet in self.fmt.tablets(files):
            folder = posixpath.dirname(display_name(tablet.segments[0][0]))
            segs = [_Segment(seqno, FileEntry(uri, size)) for uri, size in tablet.segments
                    if (seqno := segment_seqno(uri)) is not None]
            groups[self._key(folder)] = sorted(segs, key=lambda s: s.seqno)
        return groups

    def _key(self, folder: str) -> str:
        rel = posixpath.relpath(folder, self.directory) if folder != self.directory else "."
        return rel

    # --- driver -------------------------------------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        starting = self.options.starting
        if isinstance(starting, dict):
            return offset_of(starting)
        tablets = self._tablets()
        start = {key: TabletPosition(segs[0].seqno, 0) for key, segs in tablets.items() if segs}
        if starting == "earliest":
            return offset_of(start)
        return self.latest_offset(offset_of(start), ReadBudget())

    def default_budget(self) -> ReadBudget:
        return self.options.budget()

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        return compare_positions(WalPosition, a, b)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        positions = parse_offset(start)
        tablets = self._tablets()
        taken = Taken(budget)
        out = dict(positions)
        for key in sorted(tablets):
            segs = tablets[key]
            if not segs:
                continue
            given = positions.get(key)
            cur = given or TabletPosition(segs[0].seqno, 0)
            # a position this stream did not reach itself (startingPosition, a checkpoint) is checked once
            checked = given is None or self._good.get(key) == (cur.seg, cur.pos)
            if not checked and self._awaits(key, cur, segs):
                continue
            cur = self._resolve(key, cur, segs)
            new = self._walk(segs, cur, taken)
            if not checked and new == cur and self._unwritten(key, cur, segs):
                continue
            self._good[key] = (new.seg, new.pos)
            out[key] = new
        return offset_of(out)

    def _awaits(self, key: str, cur: TabletPosition, segs: list[_Segment]) -> bool:
        """True when ``cur`` names the segment after the newest (awaited, said once); SourceError when it names a
        segment that can never come, or a place past the end of a finished segment."""
        seqnos = [s.seqno for s in segs]
        first, last = seqnos[0], seqnos[-1]
        where = f"tablet {key}, wal-{cur.seg:09d} byte {cur.pos}"
        if cur.seg == last + 1:
            self._note(key, f"tablet {key}: wal-{cur.seg:09d} to appear (the newest segment is wal-{last:09d})")
            return True
        if cur.seg > last + 1:
            raise SourceError(self.directory, where, f"wal-{cur.seg:09d} can never come: the tablet's newest segment "
                                                     f"is wal-{last:09d}, and segments are numbered one after the "
                                                     "other (a position from another directory, or mistyped?)")
        if cur.seg < first:
            return False  # collected before it was read: data loss (_resolve)
        if cur.seg not in seqnos:
            raise SourceError(self.directory, where, f"the tablet has no segment wal-{cur.seg:09d}, and it can never "
                                                     f"be written (it has wal-{first:09d} to wal-{last:09d})")
        i = seqnos.index(cur.seg)
        info = self._info(segs[i])
        if info is None or info.kind == "uninitialized":
            return False
        nxt_info = self._info(segs[i + 1]) if i + 1 < len(segs) else None
        end = info.read_up_to if info.footer is not None else info.size
        finished = info.footer is not None or (nxt_info is not None and nxt_info.kind != "uninitialized")
        if finished and cur.pos > end:
            raise past_end(self.directory, where, f"wal-{cur.seg:09d}", end)
        return False

    def _unwritten(self, key: str, cur: TabletPosition, segs: list[_Segment]) -> bool:
        """True when ``cur`` is beyond the complete batches of the active segment so far (awaited, said once).

        Checked only when a walk from ``cur`` found nothing: an idle stream at its own end is not waiting for
        anything new to it."""
        seg = next((s for s in segs if s.seqno == cur.seg), None)
        info = None if seg is None or cur.pos == 0 else self._info(seg)
        if seg is None or info is None or info.kind == "closed":
            return False
        known = self._written.get(key)
        end = known[1] if known is not None and known[0] == cur.seg else info.first_entry_offset
        if info.kind == "active":
            try:
                with open_input(seg.entry.uri) as source:
                    for item in EntryScanner(source, info, start=end):
                        if isinstance(item, RawBatch):
                            end = item.offset + item.size
            except FileNotFoundError:
                return False
        self._written[key] = (cur.seg, end)
        if cur.pos <= end:
            return False
        self._note(key, f"tablet {key}: wal-{cur.seg:09d} to be written up to byte {cur.pos} (its complete entry "
                        f"batches end at byte {end} so far)")
        return True

    def _note(self, key: str, what: str) -> None:
        self.awaiting.setdefault(key, Awaiting()).note(self.directory, what)

    def _resolve(self, key: str, cur: TabletPosition, segs: list[_Segment]) -> TabletPosition:
        """``cur``, or the oldest segment still there when ``cur``'s segment was deleted (data loss)."""
        seqnos = [s.seqno for s in segs]
        if cur.seg in seqnos or cur.seg > seqnos[-1]:
            return cur
        first = seqnos[0]
        if first > cur.seg:
            missing = f"tablet {key}: segments from wal-{cur.seg:09d} byte {cur.pos} up to wal-{first:09d}"
            data_loss(self.directory, missing, fail=self.options.fail_on_data_loss,
                      then="continuing from the oldest segment", warned=self.losses, key=f"{key}:{cur.seg}:{cur.pos}")
            return TabletPosition(first, 0, cur.index)
        later = [s for s in seqnos if s > cur.seg]
        return TabletPosition(later[0], 0, cur.index) if later else cur

    def _walk(self, segs: list[_Segment], cur: TabletPosition, taken: Taken) -> TabletPosition:
        """Walk batches from ``cur`` while the budget allows; the boundary reached."""
        by_seq = {s.seqno: s for s in segs}
        taken.current_file_counted = False
        while cur.seg in by_seq:
            seg = by_seq[cur.seg]
            info = self._info(seg)
            if info is None or info.kind == "uninitialized":
                return cur
            try:
                source = open_input(seg.entry.uri)
            except FileNotFoundError:
                return cur
            with source:
                scanner = EntryScanner(source, info, start=cur.pos or None)
                for item in scanner:
                    if not isinstance(item, RawBatch):
                        continue  # a bad region between good batches: inside the range, the parse mode applies
                    ops = batch_op_ids(item.body)
                    if not taken.allows(len(ops), item.size, new_file=not taken.current_file_counted):
                        return cur
                    taken.add(len(ops), item.size)
                    cur = TabletPosition(cur.seg, item.offset + item.size, ops[-1][1] if ops else cur.index)
            later = [s.seqno for s in segs if s.seqno > cur.seg]
            nxt = by_seq[later[0]] if later else None
            nxt_info = None if nxt is None else self._info(nxt)
            finished = info.footer is not None or (nxt_info is not None and nxt_info.kind != "uninitialized")
            if not finished:
                return cur  # the active segment: more may come
            if info.footer is not None and cur.pos < info.read_up_to:
                cur = TabletPosition(cur.seg, info.read_up_to, cur.index)  # past a bad tail of a closed segment
            if nxt is None or nxt_info is None or nxt_info.kind == "uninitialized":
                return cur
            if taken.budget.max_files is not None and taken.files + 1 > taken.budget.max_files and not taken.empty:
                return cur
            cur = TabletPosition(nxt.seqno, 0, cur.index)
            taken.current_file_counted = False
        return cur

    def _info(self, seg: _Segment) -> SegmentInfo | None:
        try:
            with open_input(seg.entry.uri) as source:
                return open_segment(source, display_name(seg.entry.uri))
        except FileNotFoundError:
            return None
        except CorruptDataError as exc:
            log.info("%s: segment head not readable yet: %s", display_name(seg.entry.uri), exc)
            return None

    def plan(self, start: Offset, end: Offset) -> Sequence[WalSlice]:
        s, e = parse_offset(start), parse_offset(end)
        tablets = self._tablets()
        slices = []
        for key in sorted(e):
            hi = e[key]
            lo = s.get(key)
            segs = tablets.get(key, [])
            if lo is None:
                lo = TabletPosition(segs[0].seqno, 0) if segs else hi
            if lo.sort_key() >= hi.sort_key():
                continue
            parts = []
            for seg in segs:
                if seg.seqno < lo.seg or seg.seqno > hi.seg:
                    continue
                a = lo.pos if seg.seqno == lo.seg else 0
                b = hi.pos if seg.seqno == hi.seg else seg.entry.size
                if seg.seqno == hi.seg and b == 0:
                    continue
                parts.append((seg.entry.uri, seg.entry.size, a, b))
            if lo.seg not in {seg.seqno for seg in segs}:
                missing = f"tablet {key}: wal-{lo.seg:09d} from byte {lo.pos} (deleted before it was read)"
                data_loss(self.directory, missing, fail=self.options.fail_on_data_loss,
                          then="reading what is still there", warned=self.losses, key=f"{key}:{lo.seg}:{lo.pos}")
            if parts:
                table_id, tablet_id = tablet_ids_from_path(parts[0][0])
                slices.append(WalSlice(key, table_id, tablet_id, tuple(parts)))
        return slices

    # --- executors ----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: WalSlice) -> Iterator[pa.RecordBatch]:
        tablet = TabletRef(slice_.table_id, slice_.tablet_id,
                           tuple((u, size) for u, size, _, _ in slice_.parts),
                           tuple((a, b) for _, _, a, b in slice_.parts))
        try:
            yield from filter_batches(iter_tablet_batches(tablet, self.fmt.read_options),
                                      self.fmt.option_predicates, self.fmt.common.corrupt_column_or_none)
        except FileNotFoundError:
            missing = f"tablet {slice_.key}: a segment was deleted before this range was read"
            data_loss(self.directory, missing, fail=self.options.fail_on_data_loss, then="skipping the rest of it")

    def __getstate__(self) -> dict[str, Any]:
        return {"fmt": self.fmt, "directory": self.directory, "options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.losses = set()
        self._reset_checks()
