"""``spark.readStream.format("memcached-tap")`` killed after a batch and restarted on its checkpoint.

The server is the replay of a live conversation with Couchbase 1.8.1 (``couchbase-1.8.1-registered_reconnect``):
a registered client acknowledges up to ``reg:live1``, goes away with ``reg:live2`` / ``reg:live3``
unacknowledged, and comes back under the same name; the server re-sends those two first. The Spark query fails in
its sink on the batch holding ``reg:live2`` (so that batch is never committed, and never acknowledged), then a
new query on the same checkpoint resumes. What the two connections carried is also kept as two captures (the
server → client bytes) and read by the batch reader: the streamed rows are compared with that batch read, value
for value, and the at-least-once guarantee of ``docs/formats/memcached-tap.md`` (streaming and delivery
guarantees) is checked — no change lost, the replayed suffix in order, the items of the server at the end.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.memcached.helpers import apply_rows, expected_items
from tests.memcached.replay import ReplayServer, load_recording
from tests.support.waiting import QUERY_TIMEOUT

RECORDING = "couchbase-1.8.1-registered_reconnect"
NAME = "fixture-registered"  # the registered TAP name of the recording
#: Every column but where a row came from (a capture file and its byte offset, or the server and null).
COLUMNS = ("seq", "opcode", "vbucket", "key", "key_bytes", "value", "flags", "expiry", "cas", "tap_flags", "ttl",
           "engine_specific", "checkpoint_id", "vbucket_state", "opaque_code")
#: What identifies a change whatever connection carried it (a re-sent packet has a new seq and TAP flags).
CHANGE = ("opcode", "vbucket", "key", "value", "flags", "expiry", "cas")


def _plain(row: Any) -> dict[str, Any]:
    return {k: (bytes(v) if isinstance(v, bytearray) else v) for k, v in row.asDict().items()}


class Sink:
    """``foreachBatch`` sink keyed by (run, batch id) as an idempotent sink is: a re-run batch replaces its
    failed attempt. It fails once, on the first batch holding ``fail_on`` (before the batch is stored)."""

    def __init__(self, fail_on: str) -> None:
        self.run = 1
        self.fail_on: str | None = fail_on
        self.batches: dict[int, tuple[int, list[dict[str, Any]]]] = {}  # batch id -> (run, rows in order)
        self.failed: list[dict[str, Any]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [_plain(r) for r in df.select(*COLUMNS).collect()]
        if self.fail_on is not None and any(r["key"] == self.fail_on for r in rows):
            self.fail_on = None
            self.failed = rows
            raise RuntimeError(f"sink failure in batch {batch_id}")
        self.batches[batch_id] = (self.run, rows)

    def rows(self, run: int | None = None) -> list[dict[str, Any]]:
        return [r for b in sorted(self.batches) for r in self.batches[b][1] if run in (None, self.batches[b][0])]


def _start(spark: Any, uri: str, checkpoint: Path, sink: Sink) -> Any:
    df = (spark.readStream.format("memcached-tap").option("uri", uri).option("name", NAME)
          .option("startingPosition", "backfill").load())
    return (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


def _capture_rows(path: Path) -> list[dict[str, Any]]:
    """The batch reader's rows of one capture, in stream order (the same reader as ``spark.read``, without a
    Spark job: ``test_spark.py`` holds the two equal)."""
    table = spark_logsource.read("memcached-tap", str(path))
    assert table["offset"].to_pylist() == sorted(table["offset"].to_pylist())
    return table.select(list(COLUMNS)).to_pylist()


def _changes(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in CHANGE) for r in rows if r["opcode"] in ("MUTATION", "DELETE")]


def test_query_killed_after_a_batch_resumes_on_its_checkpoint_and_loses_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    rec = load_recording(RECORDING)
    captures = []
    for i in range(len(rec.conversations)):
        path = tmp_path / f"conversation-{i + 1}.tap"
        path.write_bytes(b"".join(rec.packets(i, "s2c")))
        captures.append(_capture_rows(path))
    first_capture, second_capture = captures
    checkpoint = tmp_path / "checkpoint"
    sink = Sink(fail_on="reg:live2")
    with ReplayServer(rec, time_scale=0.02, ack_timeout=QUERY_TIMEOUT, hold_timeout=QUERY_TIMEOUT) as server:
        query = _start(spark, server.uri, checkpoint, sink)
        with pytest.raises(StreamingQueryException, match="sink failure in batch"):
            query.awaitTermination(QUERY_TIMEOUT)
        server.wait_finished(1)  # the failed query's source closed its connection
        sink.run = 2
        query = _start(spark, server.uri, checkpoint, sink)
        try:
            deadline = time.monotonic() + QUERY_TIMEOUT
            while time.monotonic() < deadline and query.isActive and not (
                    any(r["key"] == "reg:live4" for r in sink.rows(2))
                    and len(server.logs) > 1 and server.logs[1].client_packets == rec.client_packets(1)):
                time.sleep(0.2)
            assert query.exception() is None
        finally:
            query.stop()
        server.wait_finished(2)
        for i, log in enumerate(server.logs[:2]):
            # The same TAP_CONNECT both times, and exactly the ACKs the recorded client sent: up to reg:live1 on
            # the first connection (the failed batch was never acknowledged), everything on the second.
            assert log.connect_matched and log.mismatches == [] and log.waiting_for is None and log.extra == b""
            assert log.client_packets == rec.client_packets(i)
    assert len(server.logs) == 2

    first, second = sink.rows(1), sink.rows(2)
    # Run 1 committed a prefix of what the first connection carried, and failed on the batch right after it.
    assert first == first_capture[:len(first)]
    assert sink.failed == first_capture[len(first):len(first) + len(sink.failed)]
    assert "reg:live1" in {r["key"] for r in first}
    lost = first_capture[len(first):]
    assert {r["key"] for r in lost} >= {"reg:live2", "reg:live3"}
    # Run 2 re-ran the failed batch (its range belongs to the dead connection: no rows, the server re-sends
    # them) and then carried the second connection in order, up to reg:live4 at least.
    live4 = next(i for i, r in enumerate(second_capture) if r["key"] == "reg:live4")
    assert len(second) > live4 and second == second_capture[:len(second)]
    # Nothing lost: every change of the first connection that was not committed came again on the second.
    assert set(_changes(lost)) <= set(_changes(second))
    assert _changes(second)[:len(_changes(lost))] == _changes(lost)  # the un-acknowledged suffix, first, in order
    state = apply_rows(first + second)
    assert {k: (r["value"], r["flags"], r["cas"]) for k, r in state.items()} == \
        {k: (bytes.fromhex(v["value_hex"]), v["flags"], v["cas"]) for k, v in expected_items(rec.header).items()}
