"""Streaming options shared by the binlog directory tailer and the live replication source."""

from __future__ import annotations

from spark_logsource.mysql.position import StartingPosition, parse_starting_position
from spark_logsource.options import OptionMap
from spark_logsource.streaming import dirtail
from spark_logsource.streaming.dirtail import StreamOptions

__all__ = ["STREAM_OPTIONS", "StreamOptions", "parse_stream_options"]

#: Accepted by batch reads too (and ignored there), so one option map serves read and readStream. No
#: ``maxRowsPerTrigger``: the boundary walk reads event headers, which do not say how many rows an event holds.
STREAM_OPTIONS = ("startingPosition", "failOnDataLoss", "maxBytesPerTrigger", "maxFilesPerTrigger")


def parse_stream_options(opts: OptionMap, *, default_start: str = "earliest") -> StreamOptions[StartingPosition]:
    """``startingPosition``, ``failOnDataLoss`` and the per-trigger limits (rounded up to transaction ends)."""
    return dirtail.parse_stream_options(
        opts, lambda text: parse_starting_position(text, default=default_start), rows=False)
