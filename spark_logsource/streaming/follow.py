"""Follow a :class:`LogStream` in this process: the same ranges Spark would plan, read one after the other."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from spark_logsource.streaming.stream import LogStream, offset_json

log = logging.getLogger(__name__)


def follow_stream(
    stream: LogStream, *, poll_interval: float = 1.0, stop_when_idle: bool = False
) -> Iterator[tuple[pa.RecordBatch, dict[str, Any]]]:
    """Yield ``(batch, end offset of its range)`` for each range ``[start, latest)`` as the log grows."""
    start = stream.initial_offset()
    budget = stream.default_budget()
    try:
        while True:
            end = stream.latest_offset(start, budget)
            if offset_json(end) == offset_json(start):
                if stop_when_idle:
                    return
                time.sleep(poll_interval)
                continue
            for slice_ in stream.plan(start, end):
                for batch in stream.read_slice(slice_):
                    yield batch, end
            stream.commit(end)
            log.debug("followed to %s", offset_json(end))
            start = end
    finally:
        stream.stop()
