"""A running typed ``readStream`` (``view=table``) of ``mysql-replication`` rides through a MariaDB restart: the query
stays active (``reconnectTimeout``), every change arrives exactly once, and the table rebuilt from the stream by
``seq`` equals the server's ``SELECT *``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import rebuild, table_in_new_binlog
from tests.support.servers.mariadb_stream import replica_user_server
from tests.support.servers.standin import PortStandIn
from tests.support.streaming import ArrowSink
from tests.support.waiting import expect

pytestmark = [pytest.mark.spark, pytest.mark.server]


@pytest.fixture(scope="module")
def cdc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    """A server of this module's own (not the session's shared one): the test stops and starts it."""
    with replica_user_server(tmp_path_factory, "mariadb-restart", "cdc") as server:
        yield server


def test_a_typed_query_rides_through_a_server_restart(spark: Any, cdc_server: StreamServer, tmp_path: Path) -> None:
    first, writer = table_in_new_binlog(cdc_server, "cdc.r", seed=33)
    writer.transactions(20)
    sink = ArrowSink()
    df = (spark.readStream.format("mysql-replication").option("uri", cdc_server.uri)
          .option("password", CDC_PASSWORD).option("serverId", "4650").option("view", "table")
          .option("table", "cdc.r").option("reconnectTimeout", "120")
          .option("startingPosition", json.dumps({"file": first, "pos": 4})).load())
    query = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        expect(lambda: len(sink.rows()) >= 20 or not query.isActive, 120, "rows before the restart")
        assert query.isActive, query.exception()
        cdc_server.stop()
        with PortStandIn(cdc_server.port) as stand_in:
            # the query's next trigger reaches the port: it has tried (and failed) at least once
            assert stand_in.wait_for(2), "the query never tried to reconnect"
        assert query.isActive, query.exception()
        cdc_server.start()
        writer.transactions(20)
        cdc_server.flush_logs()
        names = [p.name for p in cdc_server.binlog_files()]
        files = [str(cdc_server.binlog_dir / n) for n in names[names.index(first):]]
        want = spark_logsource.read("mysql-binlog", files, view="table", table="cdc.r").to_pylist()
        expect(lambda: len(sink.rows()) >= len(want) or not query.isActive, 180, "the query to catch up")
        assert query.isActive, query.exception()
    finally:
        query.stop()
    rows = sink.rows()
    seqs = [r["seq"] for r in rows]
    assert len(set(seqs)) == len(seqs), "no change twice"
    assert sorted(seqs) == sorted(r["seq"] for r in want), "every change of the binlogs, once"
    table = rebuild(rows)
    server = {r[0]: r for r in cdc_server.query("SELECT id, name, amount FROM cdc.r")}
    assert table.keys() == server.keys() and len(server) > 20
    assert all((table[k]["name"], table[k]["amount"]) == (v[1], v[2]) for k, v in server.items())
