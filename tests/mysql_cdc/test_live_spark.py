"""``spark.readStream`` of ``mysql-replication`` with ``view=table`` against a real MariaDB 10.11: an ADD COLUMN
mid-stream stops the query after committing everything before it, a restart on the same checkpoint goes on with
the new column, and the table rebuilt from the stream by ``seq`` equals the server's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import (
    assert_same_table,
    rebuild,
    server_rows,
    table_in_new_binlog,
)
from tests.support.streaming import ArrowSink, run_available_now
from tests.support.waiting import expect

pytestmark = [pytest.mark.spark, pytest.mark.server]


def test_live_add_column_stops_then_restart_goes_on(spark: Any, cdc_server: StreamServer, tmp_path: Path) -> None:
    first, writer = table_in_new_binlog(cdc_server, "cdc.l", seed=21)
    writer.transactions(30)
    cdc_server.flush_logs()
    writer.transactions(30)
    checkpoint = tmp_path / "ckpt"
    start = json.dumps({"file": first, "pos": 4})

    def reader() -> Any:
        return (spark.readStream.format("mysql-replication").option("uri", cdc_server.uri)
                .option("password", CDC_PASSWORD).option("serverId", "4600").option("view", "table")
                .option("table", "cdc.l").option("startingPosition", start).option("maxBytesPerTrigger", "4k"))

    sink = ArrowSink()
    run_available_now(reader().load(), checkpoint, sink, timeout=300)
    before = sink.rows()
    assert len(before) > 60 and len(sink.batches) > 1
    assert "extra" not in before[0]["after"]

    writer.transactions(20)  # read by the next run, before the ALTER
    # a query that keeps running (availableNow would end at its target, the boundary before the ALTER); its schema
    # is fixed now, so the ALTER below is a change it cannot name
    query = (reader().load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="200 milliseconds").start())
    try:
        expect(lambda: len(sink.rows()) > len(before) + 20, 120, "the running query to read the new rows")
        cdc_server.execute("ALTER TABLE cdc.l ADD COLUMN extra VARCHAR(20) AFTER name")
        cdc_server.execute("INSERT INTO cdc.l (id, name, extra, amount) VALUES (100000, 'x', 'added', 1.50)")
        writer.transactions(20)
        with pytest.raises(Exception, match="schema change") as stopped:
            query.awaitTermination(120)
    finally:
        if query.isActive:
            query.stop()
    message = str(stopped.value)
    assert "ADD COLUMN extra" in message and "restart the query on its checkpoint" in message
    assert CDC_PASSWORD not in message
    committed = sink.rows()
    assert len(committed) > len(before)  # the writer's rows before the ALTER were committed
    assert all("extra" not in r["after"] for r in committed if r["after"])
    ddl_file, ddl_pos = re.search(r"schema change at ([\w.-]+):(\d+)", message).groups()  # type: ignore[union-attr]
    assert max((r["source"]["file"].rsplit("/", 1)[-1], r["source"]["pos"]) for r in committed) < (ddl_file,
                                                                                                  int(ddl_pos))

    run_available_now(reader().load(), checkpoint, sink, timeout=300)  # a restart: the schema has the new column
    rows = sink.rows()
    after_alter = rows[len(committed):]
    assert after_alter and any(r["after"] and r["after"]["extra"] == "added" for r in after_alter)

    seqs = [r["seq"] for r in rows]
    assert len(set(seqs)) == len(seqs), "every change once"
    names = [p.name for p in cdc_server.binlog_files()]
    cdc_server.flush_logs()
    batch = spark_logsource.read("mysql-binlog", [str(cdc_server.binlog_dir / n) for n in names[names.index(first):]],
                                 view="table", table="cdc.l").to_pylist()
    assert sorted(seqs) == sorted(r["seq"] for r in batch)
    assert sorted(seqs) == seqs or len(sink.batches) > 1
    assert_same_table(rebuild(rows), server_rows(cdc_server, "cdc.l"))
