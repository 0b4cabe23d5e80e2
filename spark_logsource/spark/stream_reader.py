"""Spark's ``DataSourceStreamReader`` over any :class:`~spark_logsource.streaming.stream.LogStream`.

One reader class serves every streaming format and every pyspark from 4.0 to 4.3 (``docs/streaming.md``):

- ``latestOffset(self, start=None, limit=None)``: 4.0/4.1 call it without arguments (no admission control: the
  reader remembers the last offset it handed out and applies the ``max*PerTrigger`` options itself, from the
  second batch of a run on: the first call comes before any offset is known); 4.2+ see
  the parameters and pass ``(start, ReadLimit)``, which is mapped to a :class:`ReadBudget`.
- ``getDefaultReadLimit`` (4.2+) reports the options as one of Spark's built-in limits; when Spark hands that same
  limit back, the stream gets the whole budget of the options (several ``max*PerTrigger`` at once).
- ``reportLatestOffset`` (4.2+): the newest boundary the source has, which Spark shows as the progress'
  ``latestOffset`` next to ``endOffset`` (how far the query is behind): the answer of the trigger's own
  ``latestOffset`` when no budget capped it, else the stream asked once more from the same start without a budget.
- ``trigger(availableNow=True)``: on 4.2+, for streams that order their offsets, the reader is also a
  ``SupportsTriggerAvailableNow``: the target is the newest boundary when the first ``latestOffset`` of the run
  is asked, and no offset past it is ever returned. Otherwise Spark's own fallback runs one batch up to the
  offset seen at start. Both end the query once everything present at the start is read.

Executors run ``read`` on a pickled copy of the reader made at planning time: only the partition (a picklable
slice of the stream) carries what ``read`` needs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from spark_logsource.errors import LogSourceError
from spark_logsource.spark.base import short_error_batches, short_errors, tallied
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json

log = logging.getLogger(__name__)

#: Seconds a capped trigger's report of the newest offset is reused (see ``reportLatestOffset``).
REPORT_INTERVAL = 30.0

__all__ = ["LogStreamReader", "RefusedStreamReader", "StreamSlicePartition", "budget_from_limit",
           "make_stream_reader"]


def _streaming_datasource_module() -> Any:
    """``pyspark.sql.streaming.datasource`` (4.2+), or None on 4.0/4.1 where it does not exist."""
    try:
        from pyspark.sql.streaming import datasource
    except ImportError:
        return None
    return datasource


def default_read_limit(budget: ReadBudget) -> Any:
    """The Spark ``ReadLimit`` standing for ``budget`` (4.2+ only); Spark takes one limit, so the tightest kind
    is reported — files, then bytes, then rows — and :func:`budget_from_limit` maps it back to the whole budget."""
    mod = _streaming_datasource_module()
    if mod is None:  # pragma: no cover - only called by Spark 4.2+
        raise RuntimeError("ReadLimit needs pyspark 4.2 or later")
    if budget.max_files is not None:
        return mod.ReadMaxFiles(budget.max_files)
    if budget.max_bytes is not None:
        return mod.ReadMaxBytes(budget.max_bytes)
    if budget.max_rows is not None:
        return mod.ReadMaxRows(budget.max_rows)
    return mod.ReadAllAvailable()


def budget_from_limit(limit: Any, default: ReadBudget) -> ReadBudget:
    """The budget of one micro-batch for Spark's ``limit`` (None on 4.0/4.1: the options' ``default``)."""
    if limit is None:
        return default
    kind = type(limit).__name__
    if kind == "ReadAllAvailable":
        return ReadBudget()  # Trigger.Once / AvailableNow: the options' limits do not apply
    if not default.unlimited and _same_limit(limit, default_read_limit(default)):
        return default
    if kind == "ReadMaxRows":
        return ReadBudget(max_rows=int(limit.max_rows))
    if kind == "ReadMaxBytes":
        return ReadBudget(max_bytes=int(limit.max_bytes))
    if kind == "ReadMaxFiles":
        return ReadBudget(max_files=int(limit.max_files))
    # ReadMinRows: we never ask for it (it can hang availableNow); reading what is there is always allowed.
    log.info("read limit %r is not supported: reading everything available", limit)
    return ReadBudget()


def _same_limit(a: Any, b: Any) -> bool:
    return type(a).__name__ == type(b).__name__ and vars(a) == vars(b)


class StreamSlicePartition(InputPartition):
    """One slice of a planned range, pickled into one Spark task (its repr is the slice's)."""

    def __init__(self, index: int, slice_: Any) -> None:
        super().__init__(slice_)
        self.index = index

    def __repr__(self) -> str:
        return f"StreamSlicePartition({self.index}, {self.value!r})"


class LogStreamReader(DataSourceStreamReader):
    """Spark's micro-batch reader for one :class:`LogStream` (driver: offsets and plans; executors: ``read``)."""

    def __init__(self, stream: LogStream) -> None:
        self.stream = stream
        # Driver-side memory, used only in the runner process (never needed by ``read``):
        self._last: Offset | None = None  # newest offset handed to or heard from Spark (4.0/4.1 have no start)
        self._available_now = False
        self._target: Offset | None = None
        # The trigger's start, and the newest boundary when the trigger's own answer was not capped (None: ask).
        self._asked_from: Offset | None = None
        self._newest: Offset | None = None
        self._report: tuple[float, Offset] | None = None  # (when, the newest offset then): the capped case's answer

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the stream (options) only; driver memory must not leak into tasks.
        return {"stream": self.stream}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["stream"])  # type: ignore[misc]

    # --- driver -------------------------------------------------------------------------------------------------
    @short_errors
    def initialOffset(self) -> Offset:
        offset = self.stream.initial_offset()
        if self._last is None:  # 4.0/4.1 ask latestOffset() first: keep what was handed out then
            self._last = offset
        return offset

    def getDefaultReadLimit(self) -> Any:
        return default_read_limit(self.stream.default_budget())

    @short_errors
    def latestOffset(self, start: Offset | None = None, limit: Any = None) -> Offset:
        default = self.stream.default_budget()
        budget = budget_from_limit(limit, default)
        if start is None:
            start = self._last
        if start is None:
            # 4.0/4.1 ask for "the latest offset" first, in a new query as after a restart (initialOffset comes
            # later, the checkpointed start never), meaning the absolute newest boundary. Capping it from a guessed
            # start could answer an offset before Spark's real start, so this first batch of a run is not capped.
            start = self.stream.initial_offset()
            budget = ReadBudget()
            log.info("latestOffset() before any offset is known: the first batch of this run reads everything "
                     "available (pyspark < 4.2 gives no start to cap from)")
        # an unlimited answer is the newest boundary (availableNow: only when its target was asked for just now)
        newest = budget.unlimited and (not self._available_now or self._target is None)
        if self._available_now:
            end = self._latest_before_target(start, budget)
        else:
            end = self.stream.latest_offset(start, budget)
        self._last = end
        self._asked_from = start
        self._newest = end if newest else None
        return end

    def reportLatestOffset(self) -> Offset | None:
        """The newest boundary the source has (4.2+ call it after each ``latestOffset``; Spark's progress shows it).

        Free when the trigger read everything available (its end is the newest); when a budget or the availableNow
        target capped it, the stream is asked again from the trigger's own start (never past a range Spark has
        not committed, so a source that acknowledges its start acknowledges nothing new). A source that cannot
        answer now leaves the report empty: the next ``latestOffset`` raises its error where Spark expects it.
        """
        if self._newest is not None:
            return self._newest
        if self._asked_from is None or self._last is None:
            return None
        # An unbudgeted answer walks the whole backlog (a typed stream replays its DDL over it): asked again at most
        # every REPORT_INTERVAL seconds while it is still ahead of the trigger's end, so a query far behind does not
        # pay that walk on every trigger for a figure that only shows how far behind it is.
        cached = self._report
        if cached is not None and time.monotonic() - cached[0] < REPORT_INTERVAL and self._ahead(cached[1]):
            return cached[1]
        try:
            newest = self.stream.latest_offset(self._asked_from, ReadBudget())
        except LogSourceError as exc:
            log.info("the newest offset for the progress report is not known: %s", exc)
            return None
        self._report = (time.monotonic(), newest)
        return newest

    def _ahead(self, reported: Offset) -> bool:
        """Whether a newest offset reported before is still at or past the trigger's end. Offsets of sources with
        several parts (a tablet each) need not be ordered (a part that appeared since): then it is not."""
        assert self._last is not None
        try:
            return self.stream.compare_offsets(reported, self._last) >= 0
        except (ValueError, LogSourceError):
            return False

    def _latest_before_target(self, start: Offset, budget: ReadBudget) -> Offset:
        if self._target is None:
            self._target = self.stream.latest_offset(start, ReadBudget())
            log.info("trigger(availableNow): reading up to %s", offset_json(self._target))
            if budget.unlimited:  # the same question, just answered (a typed stream's answer walks the backlog)
                return start if self.stream.compare_offsets(start, self._target) >= 0 else self._target
        if self.stream.compare_offsets(start, self._target) >= 0:
            # The run's end. Asked once more from here, a stream that must stop at this very boundary (a schema
            # change the query's schema cannot name) raises now, ending this run with its error, not the next one.
            self.stream.latest_offset(start, budget)
            return start
        end = self.stream.latest_offset(start, budget)
        if self.stream.compare_offsets(end, self._target) > 0:
            end = self._target
        return end

    def prepareForTriggerAvailableNow(self) -> None:
        # The target is fixed by the first latestOffset of the run, which knows the start (this call does not).
        self._available_now = True
        self._target = None

    @short_errors
    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        if self._last is None:
            self._last = end  # a restarted query re-running its last planned batch
        if offset_json(start) == offset_json(end):
            return []
        return [StreamSlicePartition(i, s) for i, s in enumerate(self.stream.plan(start, end))]

    @short_errors
    def commit(self, end: Offset) -> None:
        if self._last is None:
            self._last = end
        self.stream.commit(end)

    def stop(self) -> None:
        self.stream.stop()

    # --- executors ----------------------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        corrupt = self.stream.fmt.common.corrupt_column_or_none
        return short_error_batches(tallied(self.stream.read_slice(partition.value), corrupt))


class RefusedStreamReader(DataSourceStreamReader):
    """What ``streamReader`` returns for options that cannot be streamed: Spark's first call raises ``error``.

    pyspark's source runner calls ``stop()`` on the reader even when ``streamReader`` raised, so raising there
    buries the message under an UnboundLocalError; this reader makes the error the query's only one.
    """

    def __init__(self, error: LogSourceError) -> None:
        self.error = error

    # Each method raises the error itself: one frame of ours in the traceback Spark shows.
    def initialOffset(self) -> Offset:
        raise self.error.with_traceback(None) from None

    def latestOffset(self, start: Offset | None = None, limit: Any = None) -> Offset:
        raise self.error.with_traceback(None) from None

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        raise self.error.with_traceback(None) from None

    def commit(self, end: Offset) -> None:
        raise self.error.with_traceback(None) from None

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        raise self.error.with_traceback(None) from None

    def stop(self) -> None:
        """Nothing was started."""


#: Spark 4.2+'s mixin (``pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow``); None before 4.2
_AVAILABLE_NOW_MIXIN: Any = getattr(_streaming_datasource_module(), "SupportsTriggerAvailableNow", None)
if _AVAILABLE_NOW_MIXIN is not None:

    # a base found at run time (pyspark 4.0/4.1 have none), so the type checker sees Any: subclassing it is the point
    class AvailableNowLogStreamReader(LogStreamReader, _AVAILABLE_NOW_MIXIN):  # type: ignore[misc]
        """The same reader, telling Spark 4.2+ that it honours ``trigger(availableNow=True)`` itself."""

    _AVAILABLE_NOW_CLASS: type[LogStreamReader] | None = AvailableNowLogStreamReader
else:  # pyspark 4.0/4.1
    _AVAILABLE_NOW_CLASS = None


def make_stream_reader(stream: LogStream) -> LogStreamReader:
    """The reader for ``stream``: with the availableNow mixin when Spark has it and the stream orders offsets."""
    orders = type(stream).compare_offsets is not LogStream.compare_offsets
    if orders and _AVAILABLE_NOW_CLASS is not None:
        return _AVAILABLE_NOW_CLASS(stream)
    return LogStreamReader(stream)
