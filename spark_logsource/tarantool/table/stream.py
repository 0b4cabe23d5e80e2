"""``view=space`` in ``readStream`` on a WAL directory: the tail of ``stream/tail.py`` with typed rows of one space.

``docs/formats/tarantool-typed.md`` "Streaming" states the rules.  What this adds to the plain tail:

- every offset carries the space's definition there (``table/follow.py``); a range ends before a change of the
  definition that the query's schema (fixed at start: the union of the formats the directory's files hold) cannot
  name, and the next call raises :class:`~spark_logsource.errors.SchemaChangeError`;
- ``startingPosition=snapshot``: the tuples of the newest ``.snap`` first (``op = 'SNAPSHOT'``, ``seq`` = the
  snapshot's signature), read as byte ranges of the file, then the xlogs from the snapshot's vclock on, without
  the rows the snapshot holds already (an xlog row whose LSN the snapshot's vclock covers is skipped).  While the
  snapshot is being read the offset holds ``"snapshot": {"file", "pos", "end"}``: the blocks starting before
  ``pos`` are read; ``maxBytesPerTrigger`` cuts the snapshot into several micro-batches.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.io.fs import display_name, open_input
from spark_logsource.streaming.dirtail import Taken, data_loss
from spark_logsource.streaming.stream import Offset, ReadBudget, compare_keys
from spark_logsource.tarantool.position import DirPosition, vclock_text
from spark_logsource.tarantool.read.logrows import LogRow, file_key, iter_rows
from spark_logsource.tarantool.stream.tail import TarantoolDirStream, XlogSlice
from spark_logsource.tarantool.table.catalog import SpaceDef, SpaceHistory, Version
from spark_logsource.tarantool.table.follow import (
    CATALOG_SPACES,
    SPACE_KEY,
    SpaceFollower,
    SpaceState,
    catalog_state,
)
from spark_logsource.tarantool.table.space_view import SpaceView
from spark_logsource.tarantool.xlog.meta import read_meta

if TYPE_CHECKING:
    from spark_logsource.tarantool.format import TarantoolXlogFormat

__all__ = ["SNAPSHOT_KEY", "SnapshotSlice", "SpaceDirStream", "SpaceSlice"]

log = logging.getLogger(__name__)

SNAPSHOT_KEY = "snapshot"


@dataclass(frozen=True, slots=True)
class SpaceSlice:
    """A slice of the plain tail and the space's versions over its range; ``covered`` the snapshot's vclock."""

    inner: XlogSlice
    versions: tuple[Version, ...]
    covered: tuple[tuple[int, int], ...] = ()

    def __repr__(self) -> str:
        return f"SpaceSlice({self.inner!r}, {len(self.versions)} versions)"


@dataclass(frozen=True, slots=True)
class SnapshotSlice:
    """The blocks of snapshot ``uri`` starting in ``[start, end)``, named by ``space``; ``seq`` its signature."""

    uri: str
    start: int
    end: int
    seq: int
    space: SpaceDef | None

    def __repr__(self) -> str:
        return f"SnapshotSlice({display_name(self.uri)!r}, {self.start}, {self.end})"


def _describe(offset: Mapping[str, Any]) -> str:
    return DirPosition.from_offset(offset, "offset").describe()


def _without(offset: Mapping[str, Any], key: str) -> Offset:
    return {k: v for k, v in offset.items() if k != key}


class SpaceDirStream(TarantoolDirStream):
    """The WAL directory tail of ``view=space`` (see the module docstring)."""

    def __init__(self, fmt: TarantoolXlogFormat) -> None:
        super().__init__(fmt)
        view = fmt.typed()
        assert isinstance(view, SpaceView)  # format.stream() builds this stream for view=space only
        self.view = view
        self.follower = SpaceFollower(view, display_name(self.directory), _describe)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        view = self.fmt.typed()
        assert isinstance(view, SpaceView)
        self.view = view
        self.follower = SpaceFollower(view, display_name(self.directory), _describe)

    # --- driver -------------------------------------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        if self.options.starting == "snapshot":
            return self._snapshot_start()
        given = self._given_offset()
        if given is not None:
            return given
        offset = super().initial_offset()
        if SPACE_KEY in offset:  # 'latest' walked through latest_offset, which adds the state
            return offset
        return self._with_state_there(offset)

    def _given_offset(self) -> Offset | None:
        """A ``startingPosition`` offset of this view (from ``follow()``) as it was given: with its space state and,
        in the middle of a snapshot, its ``"snapshot"`` part (the position alone would skip the snapshot's rest)."""
        if not isinstance(self.options.starting, DirPosition) or not self.fmt.starting_text:
            return None
        doc = json.loads(self.fmt.starting_text)
        if not isinstance(doc, dict) or SPACE_KEY not in doc:
            return None
        SpaceState.from_json(doc[SPACE_KEY])  # checked now: a bad one fails at start, naming the option
        snap = doc.get(SNAPSHOT_KEY)
        if snap is not None and not (isinstance(snap, dict) and isinstance(snap.get("file"), str)
                                     and isinstance(snap.get("pos"), int) and isinstance(snap.get("end"), int)):
            raise OptionError("startingPosition", f"the offset's snapshot part is not one this reader writes: {snap!r}")
        offset = self.follower.with_state(self.options.starting.to_offset(), SpaceState.from_json(doc[SPACE_KEY]))
        if snap is not None:
            offset[SNAPSHOT_KEY] = {"file": snap["file"], "pos": snap["pos"], "end": snap["end"]}
        return offset

    def _with_state_there(self, offset: Offset) -> Offset:
        """``offset`` (of a new query) with the space's state there, from the directory's catalog rows."""
        here = DirPosition.from_offset(offset, "offset")
        stop = (-1, 1, 0) if here.file is None else (here.signature, 1, here.pos)
        return self.follower.with_state(offset, self._state_before(stop))

    def _state_before(self, stop: tuple[int, int, int]) -> SpaceState:
        return catalog_state(self.fmt.list_files(), self.fmt.common, self.view.space_id, stop)

    def _snapshot_start(self) -> Offset:
        """The newest snapshot from its first block, then the xlogs from its vclock (module docstring)."""
        snaps = sorted((f for f in self.fmt.list_files() if posixpath.basename(display_name(f.uri)).endswith(
            ".snap")), key=lambda f: file_key(f.uri))
        if not snaps:
            raise OptionError("startingPosition", f"startingPosition=snapshot: {display_name(self.directory)} holds "
                                                  "no .snap file (box.snapshot() writes one)")
        snap = snaps[-1]
        name = posixpath.basename(display_name(snap.uri))
        with open_input(snap.uri) as source:
            meta = read_meta(source, display_name(snap.uri))
        signature = file_key(snap.uri)[0]
        # the xlogs go on from the newest one that starts at or before the snapshot's vclock (its rows the
        # snapshot holds are skipped by LSN); none: the snapshot's own signature, awaited as the tail does
        xlogs = [e for e in self._list() if file_key(e.uri)[0] <= signature]
        after: DirPosition
        if xlogs and (xmeta := self._meta(xlogs[-1])) is not None:
            after = self._at_start_of(xlogs[-1], xmeta)
        else:
            after = DirPosition(meta.instance_uuid, f"{signature:020d}.xlog", 0, dict(meta.vclock))
        state = self._state_before((signature, 1, 0))
        state = SpaceState(state.space, state.indexes, dict(meta.vclock))
        offset = self.follower.with_state(after.to_offset(), state)
        offset[SNAPSHOT_KEY] = {"file": name, "pos": meta.data_offset, "end": snap.size}
        log.info("%s: starting at snapshot %s (vclock %s), then the xlogs from %s", self.follower.source, name,
                 meta.vclock, after.describe())
        return offset

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        return compare_keys(self._order(a), self._order(b))

    @staticmethod
    def _order(offset: Offset) -> tuple[int, int, int]:
        snap = offset.get(SNAPSHOT_KEY)
        if snap is not None:
            return (0, int(snap["pos"]), 0)
        key = DirPosition.from_offset(offset, "offset").sort_key()
        return (1, *key)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        snap = start.get(SNAPSHOT_KEY)
        if snap is not None:
            pos, size = int(snap["pos"]), int(snap["end"])
            if budget.max_bytes is not None and pos + budget.max_bytes < size:
                return {**start, SNAPSHOT_KEY: {**snap, "pos": pos + budget.max_bytes}}
            # the rest of the snapshot fits: the range goes on into the xlogs (and drops the snapshot key)
            start = _without(start, SNAPSHOT_KEY)
        elif SPACE_KEY not in start:  # a new query's start (startingPosition=latest or a JSON offset)
            start = self._with_state_there(start)
        state = self.follower.check_start(start)
        end = super().latest_offset(start, budget)
        first, last = DirPosition.from_offset(start, "offset"), DirPosition.from_offset(end, "offset")
        if first.sort_key() >= last.sort_key():
            return self.follower.with_state(end, state)

        def at_start(row: LogRow) -> bool:
            return (row.position[0], row.offset) <= first.sort_key()

        def where(row: LogRow) -> str:
            return (f"lsn {row.lsn} of replica {row.replica_id or 0} ({posixpath.basename(row.path)} at byte "
                    f"{row.offset}; the stream is at vclock {vclock_text(first.vclock)})")

        return self.follower.latest(start, end, state, self._catalog_rows(first, last, state), at_start=at_start,
                                    boundary=lambda row: self._boundary(first, posixpath.basename(row.path),
                                                                        row.offset), where=where)

    def _catalog_rows(self, first: DirPosition, last: DirPosition, state: SpaceState) -> list[LogRow]:
        """The rows of ``_space`` and ``_index`` in ``[first, last)``, in log order, without those the snapshot
        the stream started from holds."""
        out: list[LogRow] = []
        if last.file is None:
            return out
        for entry in self._list(first.file):
            name = posixpath.basename(display_name(entry.uri))
            if name > last.file:
                break
            lo = first.pos if name == first.file else 0
            hi = last.pos if name == last.file else None
            if hi is not None and lo >= hi:
                continue
            try:
                rows = list(iter_rows(entry.uri, CATALOG_SPACES, self.fmt.common, start=lo, end=hi))
            except FileNotFoundError:
                continue  # collected: planning the range reports the loss
            out.extend(r for r in rows
                       if r.error is not None or (r.lsn or 0) > state.covered.get(r.replica_id or 0, 0))
        return out

    def _boundary(self, first: DirPosition, file: str, pos: int) -> Offset:
        """The offset of the block boundary ``file`` byte ``pos`` (at or after ``first``), with the vclock there."""
        entry = next((e for e in self._list(file) if posixpath.basename(display_name(e.uri)) == file), None)
        meta = None if entry is None else self._meta(entry)
        if entry is None or meta is None:
            raise CorruptDataError(file, pos, "the xlog of a change of the space's definition is gone")
        here = first if file == first.file else self._at_start_of(entry, meta)
        if pos > here.pos:
            here = self._walk(entry, here, Taken(ReadBudget(max_bytes=pos - here.pos)), closed=True)
        if here.pos != pos:
            raise CorruptDataError(file, pos, f"no block boundary found there (the walk stopped at {here.pos})")
        return here.to_offset()

    def plan(self, start: Offset, end: Offset) -> Sequence[Any]:
        slices: list[Any] = []
        snap = start.get(SNAPSHOT_KEY)
        if snap is not None:
            stop = int(end[SNAPSHOT_KEY]["pos"]) if SNAPSHOT_KEY in end else int(snap["end"])
            slices.extend(self._snapshot_slices(start, snap, stop))
            if SNAPSHOT_KEY in end:
                return slices
            start = _without(start, SNAPSHOT_KEY)
        inner = super().plan(start, end)
        if inner:
            state = self.follower.check_start(start)
            first, last = DirPosition.from_offset(start, "offset"), DirPosition.from_offset(end, "offset")
            versions = self.follower.versions(state, self._catalog_rows(first, last, state))
            covered = tuple(sorted(state.covered.items()))
            slices.extend(SpaceSlice(s, versions, covered) for s in inner)
        return slices

    def _snapshot_slices(self, start: Offset, snap: Mapping[str, Any], stop: int) -> list[SnapshotSlice]:
        pos = int(snap["pos"])
        name = str(snap["file"])
        state = self.follower.check_start(start)
        uri = next((f.uri for f in self.fmt.list_files() if posixpath.basename(display_name(f.uri)) == name), None)
        if uri is None:
            data_loss(display_name(self.directory), f"snapshot {name} from byte {pos} (collected before it was "
                                                     "read; start a new query from the newest snapshot)",
                      fail=self.options.fail_on_data_loss, then="skipping it", warned=self.losses)
            return []
        step = self.fmt.common.max_partition_bytes
        cuts = list(range(pos, stop, step))
        return [SnapshotSlice(uri, lo, cuts[i + 1] if i + 1 < len(cuts) else stop, file_key(uri)[0],
                              state.definition()) for i, lo in enumerate(cuts)]

    # --- executors ----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        if isinstance(slice_, SnapshotSlice):
            if not self._present(slice_.uri, slice_.start):
                return
            yield from self.view.read_snapshot(slice_.uri, slice_.start, slice_.end, slice_.space, slice_.seq)
            return
        assert isinstance(slice_, SpaceSlice)
        inner = slice_.inner
        if not self._present(inner.uri, inner.start):
            return
        history = SpaceHistory(self.view.space_id, list(slice_.versions))
        yield from self.view.read_changes(inner.uri, inner.start, inner.end, history=history,
                                          covered=dict(slice_.covered))

    def _present(self, uri: str, start: int) -> bool:
        try:
            open_input(uri).close()
        except FileNotFoundError:
            missing = f"{display_name(uri)} from byte {start} (collected before this range was read)"
            data_loss(self.directory, missing, fail=self.options.fail_on_data_loss, then="skipping it")
            return False
        return True
