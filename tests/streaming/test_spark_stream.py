"""``spark.readStream.format("tarantool-xlog")`` end to end on the session's Spark, over a real writing Tarantool.

Exactly-once is checked the way it can fail: a sink that raises in the middle of a run, a restart on the same
checkpoint, a re-run batch compared with its first attempt, and the union of every batch compared row for row
with the batch reader over the same files.
"""

from __future__ import annotations

import itertools
import json

import pytest

from tests.support.streaming import KEY_COLUMNS, BatchSink
from tests.support.tarantool_writer import start_writer
from tests.support.waiting import QUERY_TIMEOUT, until


def Sink(fail_in: int | None = None, columns: tuple[str, ...] = KEY_COLUMNS) -> BatchSink:
    """The key columns order rows (file, offset, row in block): batches and rows are compared sorted."""
    return BatchSink(columns, fail_in, sort_rows=True)


def start_query(spark, path, checkpoint, sink, trigger, **options):
    reader = spark.readStream.format("tarantool-xlog")
    options.setdefault("tupleFormat", "json")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.load(str(path)).writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())


def source_progress(query) -> list[tuple[dict, dict, int]]:
    out = []
    for p in query.recentProgress:
        src = p["sources"][0]
        if src["numInputRows"] or src["startOffset"] != src["endOffset"]:
            out.append((json.loads(src["startOffset"]), json.loads(src["endOffset"]), src["numInputRows"]))
    return out


def test_crash_and_restart_while_writing_gives_every_row_exactly_once(spark, tmp_path, expected_rows):
    from pyspark.errors import StreamingQueryException

    writer = start_writer(tmp_path / "wal", total=300, period=0.01, snapshot_every=100)
    writer.wait_for_xlog()
    checkpoint = tmp_path / "checkpoint"
    sink = Sink(fail_in=1)
    query = start_query(spark, writer.directory, checkpoint, sink, {"processingTime": "300 milliseconds"},
                        maxRowsPerTrigger=200)
    with pytest.raises(StreamingQueryException, match="sink failure in batch 1"):
        query.awaitTermination(QUERY_TIMEOUT)
    before_crash = len(sink.rows())
    query = start_query(spark, writer.directory, checkpoint, sink, {"processingTime": "300 milliseconds"},
                        maxRowsPerTrigger=200)
    writer.finish()  # the exit closes the active xlog; the running query catches up by itself
    expected = expected_rows(writer.xlogs())
    until(lambda: len(sink.rows()) >= len(expected), QUERY_TIMEOUT, alive=lambda: query.isActive)
    query.stop()
    assert query.exception() is None
    assert len(sink.attempts[1]) == 2 and sink.attempts[1][0] == sink.attempts[1][1]  # the re-run is identical
    assert sorted(sink.batches) == list(range(len(sink.batches)))
    rows = sink.rows()
    assert len({(r[3], r[2]) for r in rows}) == len(rows)  # (replica_id, lsn): no row twice
    assert rows == expected
    assert 0 < before_crash < len(rows) and len(sink.batches) >= 4


def test_available_now_with_file_budget_cuts_contiguous_batches(spark, tmp_path, finished_wal, expected_rows):
    sink = Sink()
    query = start_query(spark, finished_wal, tmp_path / "checkpoint", sink, {"availableNow": True},
                        maxFilesPerTrigger=1)
    query.awaitTermination(QUERY_TIMEOUT)
    assert query.exception() is None
    progress = source_progress(query)
    assert len(progress) >= len(list(finished_wal.glob("*.xlog"))) - 1
    for (_, end, _), (start, _, _) in itertools.pairwise(progress):
        assert start == end  # each batch starts where the previous ended
    assert sink.rows() == expected_rows(sorted(finished_wal.glob("*.xlog")))
    assert all(len({r[0] for r in rows}) == 1 for rows in sink.batches.values() if rows)  # one file each


def test_collected_start_fails_the_query_unless_allowed(spark, tmp_path, expected_rows):
    from pyspark.errors import StreamingQueryException

    from spark_logsource.api import make_format

    writer = start_writer(tmp_path / "wal", total=140, period=0.002, snapshot_every=25, cfg={"checkpoint_count": 1})
    writer.wait_for_xlog()
    # The position a query started before the collection would hold.
    position = make_format("tarantool-xlog", str(writer.directory), {}).stream().initial_offset()
    writer.finish()
    assert not (writer.directory / position["file"]).exists()
    start = json.dumps(position)
    query = start_query(spark, writer.directory, tmp_path / "ck1", Sink(), {"availableNow": True},
                        startingPosition=start)
    with pytest.raises(StreamingQueryException, match="data loss") as err:
        query.awaitTermination(QUERY_TIMEOUT)
    assert position["file"] in str(err.value)
    scalar = tuple(c for c in KEY_COLUMNS if c not in ("tuple", "ops"))
    sink = Sink(columns=(*scalar, "tuple"))
    query = start_query(spark, writer.directory, tmp_path / "ck2", sink, {"availableNow": True},
                        startingPosition=start, failOnDataLoss="false", tupleFormat="variant")
    query.awaitTermination(QUERY_TIMEOUT)
    assert query.exception() is None
    # The default variant tuples stream too; everything still there arrives (scalars compared, tuples present).
    expected = expected_rows(writer.xlogs())
    assert [r[:len(scalar)] for r in sink.rows()] == sorted(tuple(v for c, v in zip(KEY_COLUMNS, r, strict=True)
                                                                  if c in scalar) for r in expected)
    assert all(r[-1] is not None for r in sink.rows() if r[6] in ("INSERT", "REPLACE"))
