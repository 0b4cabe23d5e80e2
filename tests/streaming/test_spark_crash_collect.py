"""``spark.readStream.format("tarantool-xlog")`` tailing a real Tarantool 2.6 that keeps writing, rotates its
xlogs and collects old ones (``checkpoint_count = 1``: each ``box.snapshot()`` deletes the xlogs before it), with
the query killed in its sink and restarted on the same checkpoint: every row of the server's log exactly once.

A directory tail holds nothing the server's collector respects, so collecting an xlog the query has not read is
data loss (``test_spark_stream.py`` checks that it is reported). Here the writer holds before each snapshot until
the query has every row written so far; the xlogs are copied aside first, and the batch reader over those copies
(the files the server wrote) is the oracle.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.support.streaming import KEY_COLUMNS, BatchSink
from tests.support.tarantool_writer import start_writer
from tests.support.waiting import QUERY_TIMEOUT, until

SNAPSHOTS = 3


def _key(row: tuple) -> tuple:
    return (Path(row[0]).name, *row[1:])  # the file by its name: the oracle reads copies elsewhere


def _archived_rows(archive: Path) -> list[tuple]:
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in sorted(archive.glob("*.xlog"))],
                                 tupleFormat="json")
    return sorted(_key(tuple(r[c] for c in KEY_COLUMNS)) for r in table.to_pylist())


def _archive(directory: Path, archive: Path) -> None:
    for path in sorted(directory.glob("*.xlog")):  # again each time: the active xlog grew, closed ones are final
        shutil.copyfile(path, archive / path.name)


def _start(spark: Any, directory: Path, checkpoint: Path, sink: BatchSink) -> Any:
    df = (spark.readStream.format("tarantool-xlog").option("tupleFormat", "json").option("maxRowsPerTrigger", "200")
          .load(str(directory)))
    return (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="300 milliseconds").start())


def test_killed_and_restarted_while_writing_rotating_and_collecting(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    gate, archive = tmp_path / "gate", tmp_path / "archive"
    gate.mkdir()
    archive.mkdir()
    writer = start_writer(tmp_path / "wal", total=100 * SNAPSHOTS, period=0.005, snapshot_every=100,
                          cfg={"checkpoint_count": 1}, snapshot_gate=gate)
    writer.wait_for_xlog()
    checkpoint = tmp_path / "checkpoint"
    sink = BatchSink(KEY_COLUMNS, fail_in=1)
    collected: set[str] = set()
    try:
        query = _start(spark, writer.directory, checkpoint, sink)
        with pytest.raises(StreamingQueryException, match="sink failure in batch 1"):
            query.awaitTermination(QUERY_TIMEOUT)
        query = _start(spark, writer.directory, checkpoint, sink)
        try:
            for k in range(1, SNAPSHOTS + 1):
                assert until(lambda k=k: (gate / f"waiting-{k}").exists()), f"writer at snapshot {k}"
                _archive(writer.directory, archive)
                want = set(_archived_rows(archive))
                # (the failed batch's rows are in the sink too: the restarted query must have re-run it first)
                assert until(lambda want=want: len(sink.attempts[1]) == 2 and want <= {_key(r) for r in sink.rows()},
                             QUERY_TIMEOUT, alive=lambda: query.isActive), f"the query read all before snapshot {k}"
                before = {p.name for p in writer.xlogs()}
                (gate / f"go-{k}").touch()
                # (the snapshot and the collection after it take a moment: the next loop pass needs them done)
                assert until(lambda before=before: not before <= {p.name for p in writer.xlogs()}), "collected"
                collected |= before - {p.name for p in writer.xlogs()}
            writer.finish()  # the exit closes the active xlog
            _archive(writer.directory, archive)
            expected = _archived_rows(archive)
            assert until(lambda: len(sink.rows()) >= len(expected), QUERY_TIMEOUT, alive=lambda: query.isActive)
            time.sleep(0.6)  # a further batch would show a repeat
            assert query.exception() is None
        finally:
            query.stop()
    finally:
        if writer.running:
            writer.proc.kill()
    assert len(collected) >= SNAPSHOTS - 1 and not any((writer.directory / n).exists() for n in collected)
    assert len(list(archive.glob("*.xlog"))) >= SNAPSHOTS + 2  # rotations by size and by snapshot
    assert sink.attempts[1][0] and sink.attempts[1][0] == sink.attempts[1][1]  # the re-run batch is identical
    assert sorted(sink.batches) == list(range(len(sink.batches)))
    rows = [_key(r) for r in sink.rows()]
    assert len({(r[3], r[2]) for r in rows}) == len(rows)  # (replica_id, lsn): no row twice
    assert sorted(rows) == expected and len(expected) > 500


def test_position_at_a_snapshot_whose_xlogs_were_collected_is_not_data_loss(tmp_path: Path) -> None:
    """After ``box.snapshot()`` with ``checkpoint_count = 1`` the collector deletes every xlog, and no new one
    exists until the next write: a stream that had read everything has lost nothing; one that had not, has."""
    from spark_logsource.api import make_format
    from spark_logsource.errors import DataLossError
    from spark_logsource.streaming.stream import ReadBudget

    gate = tmp_path / "gate"
    gate.mkdir()
    writer = start_writer(tmp_path / "wal", total=100, period=0, snapshot_every=100, cfg={"checkpoint_count": 1},
                          snapshot_gate=gate)
    try:
        assert until(lambda: (gate / "waiting-1").exists())
        stream = make_format("tarantool-xlog", str(writer.directory), {}).stream()
        start = stream.initial_offset()
        end = stream.latest_offset(start, ReadBudget())
        assert end != start
        (gate / "go-1").touch()
        assert until(lambda: not writer.xlogs()), "the collector deleted every xlog"
        assert stream.latest_offset(end, ReadBudget()) == end  # read to the snapshot: nothing lost, nothing new
        with pytest.raises(DataLossError, match="no later xlog exists"):
            stream.latest_offset(start, ReadBudget())
        writer.finish()
    finally:
        if writer.running:
            writer.proc.kill()
