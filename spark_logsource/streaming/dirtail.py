"""What the directory tailers share: the Tarantool ``wal_dir``, YugabyteDB WAL and binlog directory streams.

Each of them follows one directory a server writes, walks frame headers from a position to find the newest
boundary a :class:`~spark_logsource.streaming.stream.ReadBudget` allows, and reports files collected before
they were read as data loss (``docs/streaming.md``). The parts that do not depend on the log's format live
here: the streaming options, the budget accounting of a range under construction, the data-loss policy and
the one-directory check. A slice's batches get the option filters through ``filters.filter_batches``, as
batch reads do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from spark_logsource.errors import DataLossError, OptionError, SourceError
from spark_logsource.options import OptionMap
from spark_logsource.streaming.stream import ReadBudget

__all__ = [
    "STREAM_OPTIONS",
    "Awaiting",
    "StreamOptions",
    "Taken",
    "data_loss",
    "one_directory",
    "parse_stream_options",
    "past_end",
]

log = logging.getLogger(__name__)

#: The streaming options of a directory source (accepted, and ignored, by batch reads).
STREAM_OPTIONS = ("startingPosition", "failOnDataLoss", "maxRowsPerTrigger", "maxBytesPerTrigger",
                  "maxFilesPerTrigger")

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class StreamOptions(Generic[S]):
    """``startingPosition`` (earliest | latest | the format's position), ``failOnDataLoss``, ``max*PerTrigger``."""

    starting: S
    fail_on_data_loss: bool = True
    max_rows: int | None = None
    max_bytes: int | None = None
    max_files: int | None = None

    def budget(self) -> ReadBudget:
        """The budget of one micro-batch when Spark gives none (pyspark 4.0/4.1, ``follow``)."""
        return ReadBudget(max_rows=self.max_rows, max_bytes=self.max_bytes, max_files=self.max_files)


def parse_stream_options(opts: OptionMap, parse_starting: Callable[[str | None], S], *,
                         rows: bool = True) -> StreamOptions[S]:
    """The streaming options, ``startingPosition`` read by the format's ``parse_starting``.

    ``rows=False`` for a source that cannot count rows from frame headers: ``maxRowsPerTrigger`` is then not
    read (and so not accepted).
    """
    max_bytes = opts.raw("maxBytesPerTrigger")
    return StreamOptions(
        starting=parse_starting(opts.string("startingPosition")),
        fail_on_data_loss=opts.boolean("failOnDataLoss", True),
        max_rows=opts.integer("maxRowsPerTrigger", minimum=1) if rows else None,
        max_bytes=None if max_bytes is None else opts.size("maxBytesPerTrigger", 1),
        max_files=opts.integer("maxFilesPerTrigger", minimum=1),
    )


@dataclass
class Taken:
    """What a range under construction already holds, against the budget.

    ``current_file_counted`` says the file being walked is already counted in ``files``; a walk clears it when
    it moves to the next file.
    """

    budget: ReadBudget
    rows: int = 0
    bytes: int = 0
    files: int = 0
    current_file_counted: bool = False

    @property
    def empty(self) -> bool:
        return self.rows == 0 and self.bytes == 0

    def allows(self, rows: int, nbytes: int, new_file: bool, *, first_always: bool = True) -> bool:
        """Whether adding ``rows``/``nbytes`` (from a file not counted yet if ``new_file``) stays in budget.

        The first transaction is always allowed (``first_always``): a range takes at least one.
        """
        if self.empty and first_always:
            return True
        b = self.budget
        if b.max_rows is not None and self.rows + rows > b.max_rows:
            return False
        if b.max_bytes is not None and self.bytes + nbytes > b.max_bytes:
            return False
        return not (b.max_files is not None and new_file and self.files + 1 > b.max_files)

    def add(self, rows: int, nbytes: int) -> None:
        self.rows += rows
        self.bytes += nbytes
        if not self.current_file_counted:
            self.files += 1
            self.current_file_counted = True


def one_directory(paths: list[str], what: str) -> str:
    """The one path a directory stream follows (OptionError for none or several)."""
    if len(paths) != 1:
        raise OptionError("path", f"streaming reads one {what}, got {len(paths)} paths")
    return paths[0]


def data_loss(source: str, missing: str, *, fail: bool,
              then: str = "continuing from the oldest position still there", warned: set[str] | None = None,
              key: str | None = None) -> None:
    """``missing`` is gone: DataLossError, or with ``failOnDataLoss=false`` (``fail`` False) a warning saying
    what reading does ``then``.

    ``warned``: the losses a stream already reported, by ``key`` (default: ``missing``). The driver meets one
    loss at least twice (finding the newest offset, then planning the same range): the user reads about it once.
    """
    if fail:
        raise DataLossError(source, missing) from None
    if warned is not None:
        if (key or missing) in warned:
            return
        warned.add(key or missing)
    log.warning("%s: data loss: %s is no longer available; %s (failOnDataLoss=false)", source, missing, then)


class Awaiting:
    """What a directory stream is waiting for (a file not written yet, a file to grow), logged once per thing.

    A stream that returns its start offset again and again says why, so a wait on a position that may still come
    is never silent; a position that cannot come is an error instead (:func:`past_end`).
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: str | None = None

    def note(self, source: str, what: str) -> None:
        if what != self._last:
            log.warning("%s: waiting for %s", source, what)
            self._last = what

    def clear(self) -> None:
        self._last = None


def past_end(source: str, position: str, file: str, size: int) -> SourceError:
    """The error for a position beyond the end of a finished file: no record can ever start there."""
    return SourceError(source, position, f"the position is past the end of {file}, which is finished at byte "
                                         f"{size}: no record starts there (a position from another directory, or "
                                         "mistyped?)")
