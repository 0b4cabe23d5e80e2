"""What every framer yields besides good frames: a :class:`BadRange`, and the resync contract around it.

A framer walks a byte range ``[start, end)`` of one file (or bytes pushed from a socket) and yields its own
frame type for good frames and a :class:`BadRange` for bytes that are not a good frame: one type for every
framer (Tarantool's blocks, YugabyteDB's entry batches), so readers tell bad bytes from frames the same way.
After a bad range it resumes at the next *sync point*: a position where a frame starts whose header parses and
whose checksum (or, without one, the next headers) verifies. Each bad range is reported by exactly one split —
the one whose chain of frames reaches it — so consecutive splits of a file never repeat or lose one. The reader
applies the parse mode to it (:meth:`spark_logsource.options.ParseMode.handle`): a corrupt-record row, a logged
skip, or the error.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_logsource.errors import CorruptDataError


@dataclass(frozen=True, slots=True)
class BadRange:
    """Bytes from ``offset`` that are not a good frame; ``next_offset`` is where reading resumes (None: nowhere
    in this split); ``error`` names the file, the offset and why."""

    offset: int
    error: CorruptDataError
    next_offset: int | None = None
