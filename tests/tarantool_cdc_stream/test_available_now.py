"""``trigger(availableNow=True)`` over a ``view=space`` directory tail, as Spark's runner calls the reader: the
first trigger's unlimited answer walks the backlog (and replays the space's definitions over it) once, not once for
the run's target, once for the trigger and once for the progress report."""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_logsource.spark.stream_reader import make_stream_reader
from spark_logsource.streaming.stream import ReadBudget, offset_json
from tests.support.servers.tarantool_live import LiveTarantool
from tests.tarantool_cdc_stream.support import create_space, stream_of, transactions

try:  # the ReadLimit classes (pyspark 4.2+)
    from pyspark.sql.streaming import datasource as sds
except ImportError:  # pragma: no cover - older pyspark
    sds = None

pytestmark = [pytest.mark.server, pytest.mark.skipif(sds is None, reason="pyspark < 4.2 has no ReadLimit")]


def test_the_first_available_now_trigger_asks_the_stream_once(cdc_server: LiveTarantool) -> None:
    rng = random.Random(53)
    create_space(cdc_server, "avn")
    transactions(cdc_server, "avn", rng, 30, 0)
    stream = stream_of(str(cdc_server.directory), view="space", space="avn", startingPosition="earliest")
    asked: list[str] = []
    walk = type(stream).latest_offset

    def counted(self: Any, start: Any, budget: ReadBudget) -> Any:
        asked.append(offset_json(start))
        return walk(self, start, budget)

    stream.latest_offset = counted.__get__(stream)  # type: ignore[method-assign]
    reader = make_stream_reader(stream)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert reader.reportLatestOffset() == end  # the newest boundary known: the one just found
    assert asked == [offset_json(start)]
    assert offset_json(end) == offset_json(walk(stream, start, ReadBudget()))
    assert offset_json(end) != offset_json(start)  # the backlog is read by this trigger
    rows = sum(b.num_rows for part in reader.partitions(start, end) for b in reader.read(part))
    assert rows >= 30
    # the next trigger starts at the target: the run ends there (asked once more, for a stop at that boundary)
    assert offset_json(reader.latestOffset(end, reader.getDefaultReadLimit())) == offset_json(end)
    assert asked[1:] == [offset_json(end)]

