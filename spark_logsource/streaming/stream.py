"""The contract every streaming source implements, whatever runs it (Spark, :func:`follow`, the command line).

An offset is a JSON object naming a position at a transaction boundary of one source, never a row count:
``{"v": 1, "kind": "<format>", <source identity>, <position>}`` with string keys in a fixed order (Spark's
simple-reader wrapper compares offsets as JSON text). A range ``[start, end)`` of offsets is a pure function of
the log: reading it twice gives the same rows, which is what makes a re-run micro-batch exactly-once.

Who calls what (see ``docs/ARCHITECTURE.md``):

- the driver builds one :class:`LogStream` from the user's options, asks :meth:`LogStream.initial_offset` once
  for a new query, then per micro-batch :meth:`LogStream.latest_offset` (cheap: a directory walk of headers,
  one status query) and :meth:`LogStream.plan`, and :meth:`LogStream.commit` once the sink has the batch;
- each slice returned by :meth:`LogStream.plan` is pickled to an executor, which calls
  :meth:`LogStream.read_slice` on a *pickled copy* of the stream made at planning time. Nothing the driver's
  stream learns reaches ``read_slice`` except through the slice, so slices carry every position they need.

A source that cannot serve a range any more (files collected, the server's log purged) raises
:class:`~spark_logsource.errors.DataLossError` naming the missing range, unless the user set
``failOnDataLoss=false``, in which case it logs a warning and continues from the oldest position still there.

A *position* is the database's own place in its log at a transaction boundary (a file and byte with a vclock,
a binlog file and position with a GTID state, per-tablet segments and bytes, a count of packets received), and
an offset is its JSON. Each database has one position class in its ``position.py`` that follows
:class:`Position`; its stream's ``compare_offsets`` is :func:`compare_positions` of that class.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self

import pyarrow as pa

if TYPE_CHECKING:
    from spark_logsource.logformat import LogFormat

#: A position, as Spark stores it in its offset log: JSON-serialisable, string keys, fixed key order.
Offset = dict[str, Any]


def offset_json(offset: Offset) -> str:
    """The offset as the canonical JSON text Spark stores (no key sorting: key order is part of the offset)."""
    return json.dumps(offset, separators=(",", ":"))


class Position(Protocol):
    """A place in one log (module docstring): to and from its offset JSON, ordered, and in words."""

    def to_offset(self) -> Offset:
        """The offset JSON object: ``{"v": 1, "kind": <format>, <source identity>, <position>}``, keys in order."""
        ...

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any], *, option: str = "offset") -> Self:
        """The position an offset holds; :class:`~spark_logsource.errors.OptionError` naming ``option`` when the
        offset is not one of this source's."""
        ...

    def compare(self, other: Self) -> int:
        """-1, 0 or 1 as this position is before, at or after ``other`` in the log; ValueError when the two are
        not ordered (positions of different sessions, or each ahead on some part of the log)."""
        ...

    def describe(self) -> str:
        """The position in words, for messages (never a credential)."""
        ...


def compare_positions(position_type: type[Position], a: Offset, b: Offset) -> int:
    """:meth:`LogStream.compare_offsets` for a source whose offsets each hold one ``position_type``."""
    return position_type.from_offset(a, option="offset").compare(position_type.from_offset(b, option="offset"))


def compare_keys(a: Any, b: Any) -> int:
    """-1, 0 or 1 as the sort key ``a`` is below, equal to or above ``b``: :meth:`Position.compare` of a total
    order."""
    return int(a > b) - int(a < b)


@dataclass(frozen=True, slots=True)
class ReadBudget:
    """How much one micro-batch may take (Spark's ``ReadLimit``, or the ``max*PerTrigger`` options).

    ``None`` fields are unbounded. A source rounds a budget *up* to the next transaction boundary: a
    transaction is never split across two batches, and each batch takes at least one transaction.
    """

    max_rows: int | None = None
    max_bytes: int | None = None
    max_files: int | None = None

    @property
    def unlimited(self) -> bool:
        return self.max_rows is None and self.max_bytes is None and self.max_files is None


class LogStream(abc.ABC):
    """One growing log (a directory being written, a live server), read as ranges of offsets.

    Built on the driver from a :class:`~spark_logsource.logformat.LogFormat` (which parsed and checked the
    options); pickled into executors with the slices. Keep instances small and free of open resources:
    open files and sockets inside :meth:`read_slice` (or lazily on the driver, closed in :meth:`stop`).
    """

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt

    def schema(self) -> pa.Schema:
        """The schema of every batch: the format's batch schema, so streamed and batch rows compare one for one."""
        return self.fmt.schema()

    # --- driver -------------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def initial_offset(self) -> Offset:
        """Where a new query starts (from ``startingPosition``); a restarted query resumes from its checkpoint."""

    @abc.abstractmethod
    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        """The newest complete-transaction boundary at or after ``start`` that ``budget`` allows.

        Returns ``start`` itself (equal as JSON) when nothing new is complete. Never returns a position inside a
        transaction, or past data that is not yet durable/complete (a partial block, an open transaction).
        """

    @abc.abstractmethod
    def plan(self, start: Offset, end: Offset) -> Sequence[Any]:
        """Picklable, small slices that together read exactly ``[start, end)``; ``[]`` when start == end.

        Raises :class:`~spark_logsource.errors.DataLossError` when part of the range is gone (unless the user
        set ``failOnDataLoss=false``).
        """

    def default_budget(self) -> ReadBudget:
        """The budget of one micro-batch from the user's options (``maxRowsPerTrigger`` and the like)."""
        return ReadBudget()

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        """-1, 0 or 1 as ``a`` is before, equal to or after ``b`` in this log.

        Needed only to honour Spark's ``trigger(availableNow=True)`` on 4.2+ (never go past the target recorded
        when the query started); a stream that does not override it still works, with one micro-batch up to the
        offset seen at start (Spark's own fallback). A source with a :class:`Position` class overrides it with
        :func:`compare_positions`.
        """
        if offset_json(a) == offset_json(b):
            return 0
        raise NotImplementedError(f"{type(self).__name__} does not order its offsets")

    def commit(self, end: Offset) -> None:
        """Everything up to ``end`` is in the sink: acknowledge it to the source where the protocol wants that."""
        return None

    def stop(self) -> None:
        """The query ended: close whatever the driver side opened."""
        return None

    # --- executors ----------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        """The batches of one slice, exactly its rows, deterministic; opens and closes its own files/sockets."""
