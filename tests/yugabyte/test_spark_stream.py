"""``spark.readStream.format("yugabyte-wal")`` over a WAL directory that grows, killed and restarted on its
checkpoint: every entry exactly once, equal to the batch read of the finished directory.

The directory is grown from the fixture segments (``tests/fixtures/yugabyte-wal/``) one file at a time, as tablet
servers create tablets and roll segments; one preallocated active segment is first written with only its first
entry batches (then zeros, as YugabyteDB preallocates), and completed later. The damaged tablet is left out (its
bad batch is covered by ``test_bad_input.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.yugabyte.reader import walk_segment
from tests.support.streaming import BatchSink
from tests.support.waiting import QUERY_TIMEOUT, until
from tests.yugabyte.conftest import WAL_FIXTURES

DAMAGED_TABLET = "tablet-fdae9d6b7d4d7d370c082f8c452f28aa"
#: What identifies an entry (the first four) and what it says.
COLUMNS = ("tablet_id", "segment_seqno", "offset", "entry_in_batch", "table_id", "term", "index", "hybrid_time",
           "op_type", "committed_term", "committed_index", "transaction_id", "transaction_status", "superseded")
OPTIONS = {"includeSuperseded": "true", "maxFilesPerTrigger": "1"}


def _segments() -> list[Path]:
    """The fixture segments in the order a cluster would create them: each tablet's first segment, then the
    rolled ones."""
    segs = [p for p in WAL_FIXTURES.rglob("wal-*") if not p.name.endswith(".jsonl") and DAMAGED_TABLET not in str(p)]
    return sorted(segs, key=lambda p: (p.name, str(p)))


def _batch_rows(directory: Path) -> list[tuple]:
    table = spark_logsource.read("yugabyte-wal", str(directory), **OPTIONS)
    return sorted((tuple(r[c] for c in COLUMNS) for r in table.to_pylist()), key=lambda r: r[:4])


def _start(spark: Any, directory: Path, checkpoint: Path, sink: BatchSink) -> Any:
    reader = spark.readStream.format("yugabyte-wal")
    for key, value in OPTIONS.items():
        reader = reader.option(key, value)
    return (reader.load(str(directory)).writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime="300 milliseconds").start())


def _wait(predicate: Any, query: Any) -> None:
    until(predicate, QUERY_TIMEOUT, alive=lambda: query.isActive)


def test_growing_directory_killed_mid_stream_gives_every_entry_exactly_once(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    live = tmp_path / "wals"
    segments = _segments()
    assert len(segments) == 7
    grown = next(p for p in segments if p.stat().st_size == 65536 and len(walk_segment(str(p)).batches) >= 2)
    full = grown.read_bytes()
    half = walk_segment(str(grown)).batches[1][0]  # the active segment holds its first entry batch only

    def copy(src: Path, data: bytes | None = None) -> None:
        dst = live / src.relative_to(WAL_FIXTURES)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            shutil.copyfile(src, dst)
        else:
            dst.write_bytes(data)

    copy(segments[0])
    checkpoint = tmp_path / "checkpoint"
    sink = BatchSink(COLUMNS, fail_in=1)
    query = _start(spark, live, checkpoint, sink)
    _wait(lambda: 0 in sink.batches, query)
    assert sink.batches.get(0), "the first segment's entries came in batch 0"
    copy(segments[1])
    with pytest.raises(StreamingQueryException, match="sink failure in batch 1"):
        query.awaitTermination(QUERY_TIMEOUT)
    # While the query is down, the cluster goes on: two more tablets' segments, and a half-written active one.
    copy(segments[2])
    copy(segments[3])
    copy(grown, full[:half] + bytes(len(full) - half))
    query = _start(spark, live, checkpoint, sink)
    try:
        for src in segments[4:]:
            if src != grown:
                count = len(sink.rows())
                copy(src)
                _wait(lambda c=count: len(sink.rows()) > c, query)
        copy(grown, full)  # the active segment gets the rest of its batches
        expected = _batch_rows(live)
        _wait(lambda: len(sink.rows()) >= len(expected), query)
        assert query.exception() is None
    finally:
        query.stop()
    assert sink.attempts[1][0], "the failed batch had rows"
    assert len(sink.attempts[1]) == 2 and sink.attempts[1][0] == sink.attempts[1][1]  # the re-run is identical
    assert sorted(sink.batches) == list(range(len(sink.batches)))
    rows = sink.rows()
    assert len({r[:4] for r in rows}) == len(rows)  # no entry twice
    assert sorted(rows, key=lambda r: r[:4]) == expected
    assert expected == _batch_rows(_finished_copy(tmp_path, segments))
    assert len(sink.batches) >= 5


def _finished_copy(tmp_path: Path, segments: list[Path]) -> Path:
    """The same segments copied whole, never grown: what the batch reader gives for the finished directory."""
    out = tmp_path / "finished"
    for src in segments:
        dst = out / src.relative_to(WAL_FIXTURES)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return out
