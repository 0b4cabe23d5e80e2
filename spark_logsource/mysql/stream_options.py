"""Streaming options shared by the binlog directory tailer and the live replication source."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import OptionMap
from ..streaming.stream import ReadBudget
from .position import StartingPosition, parse_starting_position

__all__ = ["STREAM_OPTIONS", "StreamOptions", "parse_stream_options"]

#: Accepted by batch reads too (and ignored there), so one option map serves read and readStream.
STREAM_OPTIONS = ("startingPosition", "failOnDataLoss", "maxBytesPerTrigger", "maxFilesPerTrigger")


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """``startingPosition``, ``failOnDataLoss`` and the per-trigger limits (rounded up to transaction ends)."""

    starting: StartingPosition
    fail_on_data_loss: bool = True
    max_bytes: int | None = None
    max_files: int | None = None

    def budget(self) -> ReadBudget:
        return ReadBudget(max_bytes=self.max_bytes, max_files=self.max_files)


def parse_stream_options(opts: OptionMap, *, default_start: str = "earliest") -> StreamOptions:
    max_bytes = opts.raw("maxBytesPerTrigger")
    return StreamOptions(
        starting=parse_starting_position(opts.string("startingPosition"), default=default_start),
        fail_on_data_loss=opts.boolean("failOnDataLoss", True),
        max_bytes=None if max_bytes is None else opts.size("maxBytesPerTrigger", 1),
        max_files=opts.integer("maxFilesPerTrigger", minimum=1),
    )
