"""memcached-tap through Spark: captures with spark.read, a replayed live server with spark.readStream."""

from __future__ import annotations

import time
from pathlib import Path

from spark_logsource.spark.sources import data_source
from tests.memcached.replay import ReplayServer, load_recording

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "memcached-tap"


def test_spark_batch_read_of_captures(spark) -> None:
    import spark_logsource

    spark.dataSource.register(data_source("memcached-tap"))
    df = spark.read.format("memcached-tap").load(str(FIXTURES / "*.tap"))
    assert [f.name for f in df.schema.fields][:6] == ["source", "offset", "seq", "opcode", "vbucket", "key"]
    want = spark_logsource.read("memcached-tap", str(FIXTURES / "*.tap"))
    rows = df.orderBy("source", "offset").collect()
    assert len(rows) == want.num_rows
    got = [r.asDict() for r in rows]
    expected = sorted(want.to_pylist(), key=lambda r: (r["source"], r["offset"]))
    for g, w in zip(got, expected, strict=True):
        assert {k: (bytes(v) if isinstance(v, bytearray) else v) for k, v in g.items()} == w
    beta = df.filter("key = 'beta' AND source LIKE '%engine-pu-dump-alpha.tap'").select("flags").collect()
    assert [r.flags for r in beta] == [0xDEADBEEF]
    assert df.filter("_corrupt_record IS NOT NULL").count() == 1  # the refused TAKEOVER capture


def test_spark_read_stream_of_a_replayed_server(spark) -> None:
    rec = load_recording("couchbase-1.8.1-backfill_ckpt_ack_live")
    recorded = [(p[1], int.from_bytes(p[12:16], "big")) for p in rec.packets(0, "s2c")]
    with ReplayServer(rec, time_scale=0.01, ack_timeout=120, hold_timeout=120) as server:
        df = (spark.readStream.format("memcached-tap").option("uri", server.uri).option("name", "fixture-live")
              .option("registered", "false").option("startingPosition", "backfill").load())
        query = (df.writeStream.format("memory").queryName("tap_live").trigger(processingTime="200 milliseconds")
                 .start())
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if spark.sql("SELECT count(*) AS n FROM tap_live").collect()[0].n >= len(recorded):
                    break
                assert query.exception() is None, query.exception()
                time.sleep(0.5)
            rows = spark.sql("SELECT opcode, seq, key FROM tap_live").collect()
        finally:
            query.stop()
        log = server.logs[0]
        assert log.connect_matched and log.mismatches == [] and log.waiting_for is None
        # Spark commits a batch before planning the next one, so every ACK the server waited for came
        assert log.client_packets == rec.client_packets(0)
    assert sorted(r.seq for r in rows) == sorted(seq for _, seq in recorded)
    assert {r.key for r in rows if r.opcode == "DELETE"} == {"live:doomed", "live:k1", "live:tmp"}
