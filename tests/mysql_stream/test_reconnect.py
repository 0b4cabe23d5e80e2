"""A running ``spark.readStream`` of ``mysql-replication`` rides through a MariaDB restart (``reconnectTimeout``):
the query stays active and every row arrives exactly once; with a tiny timeout it fails naming the server."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import UnavailableError
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.servers.mariadb import _free_port
from tests.support.servers.standin import PortStandIn
from tests.support.waiting import expect

pytestmark = [pytest.mark.server]

KEYS = ("pos", "row_index", "database", "table", "op", "gtid", "xid", "before", "after")


def _key(row: dict) -> tuple:
    return (row["file"].rsplit("/", 1)[-1], *(row[k] for k in KEYS))


@pytest.mark.spark
def test_a_running_query_rides_through_a_server_restart(spark: Any, stream_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "sink"
    out.mkdir()
    stream_server.flush_logs()
    first_file = stream_server.binlog_files()[-1].name

    def sink(batch_df: Any, batch_id: int) -> None:
        rows = [_key(r.asDict()) for r in batch_df.select("file", *KEYS).collect()]
        part = out / f"batch_{batch_id:05d}.part"
        part.write_text(json.dumps(rows))
        part.rename(out / f"batch_{batch_id:05d}.json")  # whole or absent while the test polls; idempotent per id

    def sunk() -> list[tuple]:
        return [tuple(r) for f in sorted(out.glob("batch_*.json")) for r in json.loads(f.read_text())]

    df = (spark.readStream.format("mysql-replication").option("uri", stream_server.uri)
          .option("password", CDC_PASSWORD).option("serverId", "4700").option("rowFormat", "json")
          .option("startingPosition", json.dumps({"file": first_file, "pos": 4})).load())
    query = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        with Writer(stream_server, seed=41, pause=0.01):
            expect(lambda: len(sunk()) > 20, 120, "rows before the restart")
        stream_server.stop()
        with PortStandIn(stream_server.port) as stand_in:
            # the query's next trigger reaches the port: it has tried (and failed) at least once
            assert stand_in.wait_for(2), "the query never tried to reconnect"
        assert query.isActive, query.exception()
        stream_server.start()
        with Writer(stream_server, seed=42, pause=0.01) as writer:
            writer.wait_for(20)  # writes after the restart (a count of files may have been reached before it)
        stream_server.flush_logs()
        names = [p.name for p in stream_server.binlog_files()]
        files = [str(stream_server.binlog_dir / n) for n in names[names.index(first_file):]]
        want = [_key(r) for r in spark_logsource.read("mysql-binlog", files, rowFormat="json").to_pylist()]
        expect(lambda: len(sunk()) >= len(want) or not query.isActive, 180, "the query to catch up")
        assert query.isActive, query.exception()
    finally:
        query.stop()
    got = sunk()
    assert len(want) > 40
    assert [tuple(w) for w in json.loads(json.dumps(want))] == got, "every row exactly once, in binlog order"


def test_a_tiny_timeout_fails_naming_the_server(caplog: pytest.LogCaptureFixture) -> None:
    port = _free_port()  # nothing listens there
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="spark_logsource"), pytest.raises(UnavailableError) as info:
        list(spark_logsource.follow("mysql-replication", f"mysql://cdc@127.0.0.1:{port}", password=CDC_PASSWORD,
                                    reconnectTimeout=1.5, stop_when_idle=True))
    took = time.monotonic() - began
    text = str(info.value)
    assert f"mysql://127.0.0.1:{port}" in text and "reconnectTimeout=1.5" in text and "tries" in text
    assert 1.5 <= took < 10
    tries = [r for r in caplog.records if r.levelno == logging.WARNING and f"127.0.0.1:{port}" in r.getMessage()]
    assert len(tries) >= 2 and all(CDC_PASSWORD not in r.getMessage() for r in tries)


@pytest.mark.spark
def test_a_spark_query_with_a_tiny_timeout_fails_naming_the_server(spark: Any, tmp_path: Path) -> None:
    port = _free_port()
    df = (spark.readStream.format("mysql-replication").option("uri", f"mysql://cdc@127.0.0.1:{port}")
          .option("password", CDC_PASSWORD).option("reconnectTimeout", "1")
          .option("startingPosition", json.dumps({"file": "mysql-bin.000001", "pos": 4})).load())
    query = (df.writeStream.foreachBatch(lambda b, i: None).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        with pytest.raises(Exception) as info:  # Spark wraps our error in its own
            query.awaitTermination(120)
        assert not query.isActive
        text = str(info.value)
    finally:
        query.stop()
    assert f"mysql://127.0.0.1:{port}" in text and "reconnectTimeout=1" in text
    assert CDC_PASSWORD not in text
