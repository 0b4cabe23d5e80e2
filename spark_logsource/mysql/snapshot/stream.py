"""``startingPosition=snapshot`` on ``mysql-replication`` with ``view=table``: the table as of one binlog position T,
then its typed changes from T on (``docs/formats/mysql-snapshot.md`` "Streaming from a snapshot").

:class:`SnapshotStream` wraps the live ``view=table`` stream. Its first offsets are the snapshot phase
(:mod:`.offsets`): T, the plan and how many chunks are read; a micro-batch takes whole chunks, one slice (one
task: :func:`~spark_logsource.mysql.snapshot.chunk.read_chunk`) per chunk. After the last chunk the offset is the
live stream's own offset at T, with the table's layout there, and every later call is the live stream's. A
range from a snapshot offset to a binlog offset past T reads the remaining chunks and the changes up to that
offset: the snapshot at T and the changes from T give each row once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import OptionError, SchemaChangeError, SourceError
from spark_logsource.mysql.position import BinlogPosition, GtidState, binlog_number
from spark_logsource.mysql.snapshot.chunk import read_chunk
from spark_logsource.mysql.snapshot.offsets import SnapshotOffset, is_snapshot_offset
from spark_logsource.mysql.snapshot.plan import DEFAULT_CHUNKS, MAX_CHUNKS, Chunk, SnapshotPlan, plan_snapshot
from spark_logsource.options import OptionMap
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget

if TYPE_CHECKING:
    from spark_logsource.mysql.replication_format import MysqlReplicationFormat
    from spark_logsource.mysql.table.follow import TableFollower

__all__ = ["SnapshotOptions", "SnapshotSlice", "SnapshotStream", "parse_snapshot_options", "take_snapshot_start"]

log = logging.getLogger(__name__)

#: The chunks' binlog reads register as ``serverId + CHUNK_ID_OFFSET + chunk index``: apart from the live slices'
#: ``serverId + i`` (``serverId`` is at most 2**32 - 1025, so the ids stay below 2**32).
CHUNK_ID_OFFSET = 512


@dataclass(frozen=True, slots=True)
class SnapshotOptions:
    """``startingPosition=snapshot`` (or a snapshot offset to resume from), ``snapshotChunks``,
    ``maxChunksPerTrigger``."""

    start: str
    chunks: int = DEFAULT_CHUNKS
    max_chunks: int | None = None

    @property
    def resume(self) -> dict[str, Any] | None:
        """The snapshot offset ``startingPosition`` names (None: take a new snapshot)."""
        return json.loads(self.start) if self.start.startswith("{") else None


def take_snapshot_start(options: MutableMapping[str, Any]) -> str | None:
    """Remove ``startingPosition`` from ``options`` when it is ``snapshot`` or a snapshot offset's JSON, and return
    it (the binlog position options do not know either)."""
    for key in list(options):
        if key.lower() != "startingposition" or options[key] is None:
            continue
        text = str(options[key]).strip()
        if text.lower() == "snapshot":
            del options[key]
            return "snapshot"
        if text.startswith("{"):
            try:
                doc = json.loads(text)
            except ValueError:
                return None  # the position parser says what is wrong with it
            if isinstance(doc, Mapping) and is_snapshot_offset(doc):
                del options[key]
                return text
    return None


def parse_snapshot_options(opts: OptionMap, start: str | None, view: str) -> SnapshotOptions | None:
    """The snapshot options, or None when ``startingPosition`` is not a snapshot; refused without ``view=table``.

    With ``view=table`` and another start (a query resumed from a binlog offset the snapshot's stream gave), the
    snapshot's own options are accepted and have nothing to do."""
    chunks = opts.integer("snapshotChunks", None, minimum=1, maximum=MAX_CHUNKS)
    max_chunks = opts.integer("maxChunksPerTrigger", None, minimum=1)
    if start is None:
        for name, value in (("snapshotChunks", chunks), ("maxChunksPerTrigger", max_chunks)):
            if value is not None and view != "table":
                raise OptionError(name, "applies to startingPosition=snapshot with view=table only")
        return None
    if view != "table":
        raise OptionError("startingPosition", f"snapshot needs view=table (one table's typed rows: the snapshot "
                                              f"gives them with op='r'), not view={view}")
    return SnapshotOptions(start, chunks if chunks is not None else DEFAULT_CHUNKS, max_chunks)


@dataclass(frozen=True, slots=True)
class SnapshotSlice:
    """One chunk of the snapshot (one task); ``plan`` carries this chunk only."""

    plan: SnapshotPlan
    chunk: Chunk

    def __repr__(self) -> str:
        return f"SnapshotSlice({self.plan.name} at {self.plan.position}, chunk {self.chunk.index})"


class SnapshotStream(LogStream):
    """The snapshot phase, then the live ``view=table`` stream from T (see the module docstring)."""

    fmt: MysqlReplicationFormat

    def __init__(self, fmt: MysqlReplicationFormat, live: LogStream, options: SnapshotOptions) -> None:
        super().__init__(fmt)
        self.live = live
        self.options = options
        self._initial: Offset | None = None  # the driver's: one snapshot per run, whoever asks first

    def __repr__(self) -> str:
        return f"SnapshotStream({self.fmt.settings.source!r}, {self.live!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"fmt": self.fmt, "live": self.live, "options": self.options, "_initial": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def schema(self) -> pa.Schema:
        return self.live.schema()

    @property
    def _follower(self) -> TableFollower:
        follower: TableFollower | None = getattr(self.live, "follower", None)
        assert follower is not None, "startingPosition=snapshot is parsed for view=table only"
        return follower

    def _parse(self, offset: Mapping[str, Any], option: str = "offset") -> SnapshotOffset:
        snap = SnapshotOffset.from_offset(offset, self.fmt.settings.source, option=option)
        why = self._follower.fits(snap.plan.layout)
        if why is not None:
            raise SourceError(self.fmt.settings.source, snap.plan.position,
                              f"{snap.plan.name}: the layout at the snapshot's position does not fit the query's "
                              f"schema ({why}); start a new snapshot")
        return snap

    # -- driver ---------------------------------------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        if self._initial is None:
            resume = self.options.resume
            if resume is not None:
                self._initial = self._parse(resume, "startingPosition").to_offset()
            else:
                self._initial = self.fmt.settings.reconnect.call(self._take, "taking the snapshot's position")
        return self._initial

    def _take(self) -> Offset:
        settings = self.fmt.settings
        table = self._follower.view.options
        with self.fmt.client() as client:
            identity = client.identity()
        plan = plan_snapshot(settings, f"{table.database}.{table.table}", self.options.chunks,
                             server_id_base=self.fmt.server_id_base + CHUNK_ID_OFFSET)
        if identity[1] != plan.server_id:
            raise SourceError(settings.source, plan.position, f"the server changed while the snapshot was planned "
                                                              f"(server_id {identity[1]}, then {plan.server_id})")
        # the text offsets hold and compare: the GTID state as binlog offsets write it
        plan = dataclasses.replace(plan, gtid=GtidState.parse(plan.gtid).text() or None)
        snap = self._parse(SnapshotOffset(plan, identity, 0).to_offset())
        log.info("%s: streaming %s from its snapshot at %s (%d chunk(s)), then its changes", settings.source,
                 plan.name, plan.position, len(plan.chunks))
        return snap.to_offset()

    def handover(self, snap: SnapshotOffset) -> Offset:
        """The live stream's offset at T, with the table's layout at T: where the changes start."""
        return self._follower.with_state(snap.position().to_offset(), snap.table_state())

    def default_budget(self) -> ReadBudget:
        live = self.live.default_budget()
        if self.options.max_chunks is None:
            return live
        # Spark takes one limit: the chunk count stands as files, the tightest kind (spark/stream_reader.py)
        return ReadBudget(max_rows=live.max_rows, max_bytes=live.max_bytes, max_files=self.options.max_chunks)

    def _live_budget(self, budget: ReadBudget) -> ReadBudget:
        return self.live.default_budget() if budget == self.default_budget() else budget

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        if not is_snapshot_offset(start):
            return self.live.latest_offset(start, self._live_budget(budget))
        snap = self._parse(start)
        left = len(snap.plan.chunks) - snap.done
        if budget.unlimited:
            take = left
        elif budget == self.default_budget():
            take = min(left, self.options.max_chunks or left)
        else:  # a limit Spark set: files count chunks; a row or byte limit still takes one (a chunk is whole)
            take = min(left, budget.max_files or 1)
        if take < left:
            return snap.moved(snap.done + take).to_offset()
        handover = self.handover(snap)
        if not budget.unlimited:
            return handover
        try:  # everything available: the changes since T too
            return self.live.latest_offset(handover, ReadBudget())
        except SchemaChangeError:
            return handover  # the snapshot first; the next range meets the statement again

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        ka, kb = self._sort_key(a), self._sort_key(b)
        return (ka > kb) - (ka < kb)

    def _sort_key(self, offset: Offset) -> tuple[str, int, int, int, int]:
        if is_snapshot_offset(offset):
            return SnapshotOffset.from_offset(offset, self.fmt.settings.source).sort_key()
        prefix, number, pos = BinlogPosition.from_offset(offset).sort_key()
        return prefix, number, pos, 1, 0

    def plan(self, start: Offset, end: Offset) -> Sequence[Any]:
        if not is_snapshot_offset(start):
            if is_snapshot_offset(end):
                raise OptionError("offset", "a range from a binlog offset to a snapshot offset")
            return self.live.plan(start, end)
        snap = self._parse(start)
        if is_snapshot_offset(end):
            last = self._parse(end)
            if not snap.same_plan(last) or last.done < snap.done:
                raise SourceError(self.fmt.settings.source, snap.plan.position,
                                  f"the range ends in another snapshot ({last.describe()}) than it starts "
                                  f"({snap.describe()})")
            return self._chunks(snap, last.done)
        here = BinlogPosition.from_offset(end)
        if (binlog_number(here.file)[1], here.pos) < (snap.plan.file_number, snap.plan.pos):
            raise SourceError(self.fmt.settings.source, here.describe(),
                              f"the range ends before its snapshot's position ({snap.describe()})")
        return [*self._chunks(snap, len(snap.plan.chunks)), *self.live.plan(self.handover(snap), end)]

    @staticmethod
    def _chunks(snap: SnapshotOffset, done: int) -> list[SnapshotSlice]:
        return [SnapshotSlice(dataclasses.replace(snap.plan, chunks=(chunk,)), chunk)
                for chunk in snap.plan.chunks[snap.done:done]]

    def commit(self, end: Offset) -> None:
        if not is_snapshot_offset(end):
            self.live.commit(end)

    def stop(self) -> None:
        self.live.stop()

    # -- executors ------------------------------------------------------------------------------------------------
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        if not isinstance(slice_, SnapshotSlice):
            yield from self.live.read_slice(slice_)
            return
        common = self.fmt.common
        yield from read_chunk(self.fmt.settings, slice_.plan, slice_.chunk, view_columns=self._follower.view.columns,
                              schema=self.schema(), batch_size=common.batch_size, mode=common.mode,
                              corrupt_column=common.corrupt_column_or_none, verify_checksums=common.verify_checksums)
