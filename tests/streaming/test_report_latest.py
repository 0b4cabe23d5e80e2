"""The lag a query can see: ``reportLatestOffset`` (pyspark 4.2+) gives Spark the newest boundary of the source,
which its progress shows as ``latestOffset`` next to ``endOffset``. The source is the Tarantool WAL directory of a
finished real Tarantool 2.6, read in budgeted micro-batches, so the newest boundary is known and stays put."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_logsource.api import make_format
from spark_logsource.spark.stream_reader import make_stream_reader
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from tests.support.streaming import KEY_COLUMNS, BatchSink
from tests.support.waiting import QUERY_TIMEOUT, until

try:
    from pyspark.sql.streaming import datasource as sds
except ImportError:  # pyspark 4.0/4.1 never ask a Python source for its latest offset
    sds = None
pytestmark = pytest.mark.skipif(sds is None, reason="pyspark < 4.2 has no reportLatestOffset")


def _stream(path: Path, **options: str) -> LogStream:
    return make_format("tarantool-xlog", str(path), {"tupleFormat": "json", **options}).stream()


def _newest(path: Path) -> Offset:
    """The end of the directory, as a fresh stream without a budget finds it."""
    stream = _stream(path)
    return stream.latest_offset(stream.initial_offset(), ReadBudget())


def _parsed(offset: Offset) -> Any:
    return json.loads(offset_json(offset))


def test_the_reader_reports_the_newest_boundary_while_a_budget_caps_the_batch(finished_wal: Path) -> None:
    newest = _newest(finished_wal)
    reader = make_stream_reader(_stream(finished_wal, maxRowsPerTrigger="20"))
    assert reader.reportLatestOffset() is None  # nothing asked yet: nothing to report
    start = reader.initialOffset()
    ends = []
    while True:
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert offset_json(reader.reportLatestOffset()) == offset_json(newest)
        if offset_json(end) == offset_json(start):
            break
        ends.append(end)
        start = end
    assert len(ends) > 3  # 150 rows, 20 a batch: the batches were behind the reported offset
    assert offset_json(ends[-1]) == offset_json(newest)

    # without a budget the trigger's own answer is the newest boundary
    free = make_stream_reader(_stream(finished_wal))
    first = free.initialOffset()
    end = free.latestOffset(first, free.getDefaultReadLimit())
    assert offset_json(end) == offset_json(newest)
    assert free.reportLatestOffset() is end


def test_spark_progress_shows_the_latest_offset_ahead_of_the_batch(spark: Any, finished_wal: Path,
                                                                    tmp_path: Path) -> None:
    newest = _parsed(_newest(finished_wal))
    sink = BatchSink(KEY_COLUMNS)
    query = (spark.readStream.format("tarantool-xlog").option("tupleFormat", "json")
             .option("maxRowsPerTrigger", "20").load(str(finished_wal))
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        def caught_up() -> bool:
            progress = query.lastProgress
            return progress is not None and json.loads(progress["sources"][0]["endOffset"]) == newest

        assert until(caught_up, QUERY_TIMEOUT, alive=lambda: query.isActive), "the query did not catch up"
        sources = [p["sources"][0] for p in query.recentProgress]
    finally:
        query.stop()
    reported = [json.loads(s["latestOffset"]) for s in sources if s.get("latestOffset")]
    assert reported and all(r == newest for r in reported)
    behind = [s for s in sources if s.get("latestOffset") and json.loads(s["endOffset"]) != newest]
    assert len(behind) >= 3  # batches of 20 rows of 150: Spark saw the query behind the source's end
    assert sum(s["numInputRows"] for s in sources) == sum(len(rows) for rows in sink.batches.values())


def test_a_report_not_ordered_with_the_trigger_end_is_asked_again(finished_wal: Path, monkeypatch: Any) -> None:
    """Offsets of a source with several parts (YugabyteDB: a tablet each) need not be ordered: a report kept from
    an earlier trigger that is neither before nor after this trigger's end is asked again, not raised to Spark
    (a new tablet once failed a query that way)."""
    newest = _newest(finished_wal)
    reader = make_stream_reader(_stream(finished_wal, maxRowsPerTrigger="20"))
    start = reader.initialOffset()
    reader.latestOffset(start, reader.getDefaultReadLimit())
    assert offset_json(reader.reportLatestOffset()) == offset_json(newest)  # computed, then kept

    def not_ordered(a: Offset, b: Offset) -> int:
        raise ValueError("offsets are not ordered (each is ahead on some tablet)")

    monkeypatch.setattr(reader.stream, "compare_offsets", not_ordered)
    assert offset_json(reader.reportLatestOffset()) == offset_json(newest)
