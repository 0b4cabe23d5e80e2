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
) -> Iterator[tuple[pa.RecordBatch, dict[str, Any] | None]]:
    """Yield ``(batch, offset)`` for each range ``[start, latest)`` as the log grows.

    A range may give several batches (``batchSize``), and a batch may end inside a transaction: only the range's
    end is a position to resume from. So the range's last batch carries its end offset and the others carry
    None; a range whose rows were all filtered out gives one empty batch carrying its end offset, so the
    position keeps moving. A consumer commits its work together with each offset that is not None: resuming
    from the last one committed gives every row once.
    """
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
            held: pa.RecordBatch | None = None  # one batch behind: the last one of a range is known at its end
            for slice_ in stream.plan(start, end):
                for batch in stream.read_slice(slice_):
                    if held is not None:
                        yield held, None
                    held = batch
            yield (held if held is not None else _empty(stream.schema())), end
            stream.commit(end)
            log.debug("followed to %s", offset_json(end))
            start = end
    finally:
        stream.stop()


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
