"""``spark.readStream.format("tarantool-replication")`` against a real Tarantool 2.6 that keeps writing, rotates
its xlogs (16 KiB) and collects old ones (``checkpoint_count = 1`` and ``box.snapshot()``), with the query killed
in its sink and restarted on the same checkpoint: every row of the server's log arrives exactly once.

The server collects only xlogs the query has read: an anonymous replica holds no garbage-collection consumer, so
collecting what the query still needs is data loss (``test_failures.py`` covers that). Before each collection the
writer pauses until the query has caught up, and the xlogs are copied aside; the batch reader over those copies
(files the server wrote) is the oracle.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.streaming import BatchSink
from tests.support.tarantool_live import directory_rows
from tests.support.waiting import QUERY_TIMEOUT, until

pytestmark = [pytest.mark.spark, pytest.mark.server]

KEYS = ("lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple")
#: A fiber committing single-row and three-row transactions (and deletes) every 10 ms until ``writer_on`` is false
#: (then ``writer_done``); ``writer_pause`` holds it between transactions, and ``writer_held`` says it is held (no
#: transaction of its own in flight: the vclock is final until the pause ends).
WRITER = ("local fiber = require('fiber') _G.writer_on = true _G.writer_pause = false _G.writer_n = 0 "
          "_G.writer_held = false _G.writer_done = false "
          "fiber.create(function() local i = 0 while _G.writer_on do _G.writer_held = _G.writer_pause "
          "if not _G.writer_pause then i = i + 1 "
          "if i % 5 == 0 then box.begin() for k = 1, 3 do box.space.t:replace{100000 + i * 10 + k, "
          "string.rep('x', i % 50)} end box.commit() "
          "elseif i % 7 == 0 then box.space.t:delete{100000 + (i - 7) * 10} "
          "else box.space.t:replace{100000 + i * 10, i} end _G.writer_n = i end "
          "fiber.sleep(0.01) end _G.writer_done = true end)")


@pytest.fixture
def rotating_server(tmp_path: Path) -> Any:
    server = LiveTarantool(tmp_path / "srv", checkpoint_count=1, wal_max_size=16 << 10)
    server.start()
    yield server
    server.stop(kill=True)


def _start(spark: Any, server: LiveTarantool, checkpoint: Path, sink: BatchSink, start: dict[int, int]) -> Any:
    options = {k: str(v) for k, v in server.options(tupleFormat="json", maxRowsPerTrigger=200,
                                                     startingPosition=json.dumps({"1": start[1]})).items()}
    df = spark.readStream.format("tarantool-replication").options(**options).load()
    return (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="300 milliseconds").start())


def _archive(server: LiveTarantool, archive: Path) -> None:
    """Copy every xlog aside (again: the active one grew, a closed one is final)."""
    for path in server.xlog_files():
        shutil.copyfile(path, archive / path.name)


def _read_up_to(sink: BatchSink, lsn: int, query: Any) -> bool:
    return until(lambda: max((r[0] for r in sink.rows()), default=0) >= lsn, QUERY_TIMEOUT,
                 alive=lambda: query.isActive, interval=0.1)


def _written(server: LiveTarantool, transactions: int) -> None:
    """Until the writer committed ``transactions`` more (an amount, not a time: a loaded machine is slower)."""
    target = int(server.value("_G.writer_n")) + transactions
    assert until(lambda: int(server.value("_G.writer_n")) >= target, interval=0.1), "the writer went on"


def _flag(server: LiveTarantool, name: str) -> None:
    assert until(lambda: server.value(f"_G.{name}") == "true", interval=0.1), f"the writer set {name}"


def test_killed_and_restarted_while_writing_rotating_and_collecting(spark: Any, rotating_server: LiveTarantool,
                                                                     tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    server = rotating_server
    archive = tmp_path / "archive"
    archive.mkdir()
    checkpoint = tmp_path / "checkpoint"
    start = server.vclock()
    sink = BatchSink(KEYS, fail_in=2)
    server.eval(WRITER)
    try:
        query = _start(spark, server, checkpoint, sink, start)
        with pytest.raises(StreamingQueryException, match="sink failure in batch 2"):
            query.awaitTermination(QUERY_TIMEOUT)
        _written(server, 20)  # the writer goes on while the query is down
        query = _start(spark, server, checkpoint, sink, start)
        collected: list[str] = []
        try:
            for _ in range(2):
                _written(server, 70)
                server.eval("_G.writer_pause = true")
                _flag(server, "writer_held")  # its last commit is written: nothing comes after paused_at
                paused_at = server.vclock()[1]
                assert _read_up_to(sink, paused_at, query), "the query caught up with the paused writer"
                _archive(server, archive)
                before = {p.name for p in server.xlog_files()}
                server.eval("box.snapshot()")
                # the server's collector runs after the checkpoint
                until(lambda before=before: not before <= {p.name for p in server.xlog_files()})
                collected += sorted(before - {p.name for p in server.xlog_files()})
                server.eval("_G.writer_pause = false")
            _written(server, 70)
            server.eval("_G.writer_on = false")
            _flag(server, "writer_done")  # its last commit is written: end is the end
            end = server.vclock()
            _archive(server, archive)
            assert _read_up_to(sink, end[1], query)
            time.sleep(1.0)  # a further batch would show a row past the end, or a repeat
            assert query.exception() is None
        finally:
            query.stop()
    finally:
        server.eval("_G.writer_on = false")
    assert len(collected) >= 2 and len(list(archive.glob("*.xlog"))) >= 4  # rotated and collected
    assert not any((server.directory / name).exists() for name in collected)
    assert sink.attempts[2][0] and sink.attempts[2][0] == sink.attempts[2][1]  # the re-run batch is identical
    assert sorted(sink.batches) == list(range(len(sink.batches)))
    rows = sink.rows()
    expected = [tuple(r[k] for k in KEYS) for r in directory_rows(archive, start, end, "json")]
    assert len(expected) > 500
    assert rows == expected  # every row of the server's log once, in commit order, value for value
    for rows_of_batch in sink.batches.values():  # whole transactions per batch
        assert not rows_of_batch or rows_of_batch[-1][3]
