"""Streaming: logs that grow, read as exactly-once ranges of positions (see ``docs/ARCHITECTURE.md``)."""

from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json

__all__ = ["LogStream", "Offset", "ReadBudget", "offset_json"]
