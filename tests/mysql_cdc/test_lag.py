"""A ``view=table`` stream of ``mysql-replication`` whose table is idle while other tables are written: its offsets
still move to the server's end (range by range, empty ranges included), so a checkpoint never pins binlogs the
server wants to purge, and after a purge of every older binlog the stream goes on from its offset with the
table's next changes. Checked on a real MariaDB 10.11 with the LogStream calls Spark makes and with ``follow()``."""

from __future__ import annotations

import json
from typing import Any

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.mysql.position import binlog_number
from spark_logsource.streaming.stream import Offset, ReadBudget
from tests.mysql_cdc.conftest import drive
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import create_table, rebuild, table_in_new_binlog


def _options(server: StreamServer, table: str, start: str, server_id: str) -> dict[str, str]:
    return {"uri": server.uri, "password": CDC_PASSWORD, "serverId": server_id, "view": "table", "table": table,
            "startingPosition": start}


def _noise(server: StreamServer, transactions: int, rotate_every: int) -> None:
    """Multi-row transactions on another table, with binlog rotations between them."""
    import pymysql

    server.execute("CREATE TABLE IF NOT EXISTS cdc.noise (id INT PRIMARY KEY AUTO_INCREMENT, msg VARCHAR(200))")
    conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            for i in range(transactions):
                cur.execute("BEGIN")
                cur.executemany("INSERT INTO cdc.noise (msg) VALUES (%s)", [(f"noise {i} {k}",) for k in range(5)])
                cur.execute("UPDATE cdc.noise SET msg = CONCAT(msg, '+') ORDER BY id DESC LIMIT 2")
                cur.execute("COMMIT")
                if i % rotate_every == rotate_every - 1:
                    cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()


def _end(server: StreamServer) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def _at(offset: Offset) -> tuple[str, int]:
    return str(offset["file"]), int(offset["pos"])


def test_an_idle_table_offset_follows_the_server_end_and_survives_a_purge(cdc_server: StreamServer) -> None:
    first, writer = table_in_new_binlog(cdc_server, "cdc.idle", seed=31)
    writer.transactions(5)
    stream = make_format("mysql-replication", cdc_server.uri, _options(
        cdc_server, "cdc.idle", json.dumps({"file": first, "pos": 4}), "4900")).stream()
    rows, offset0, error = drive(stream, stream.initial_offset())
    assert error is None and len(rows) >= 5
    assert _at(offset0) == _end(cdc_server)

    _noise(cdc_server, 300, rotate_every=100)  # the followed table is idle; three rotations
    # budgeted ranges (3000 bytes, as a maxBytesPerTrigger would cut them): most hold no row of the table
    idle_rows, offset1, error = drive(stream, offset0, ReadBudget(max_bytes=3000))
    assert error is None and idle_rows == []
    assert _at(offset1) == _end(cdc_server)
    assert binlog_number(offset1["file"])[1] >= binlog_number(offset0["file"])[1] + 3
    assert offset1["table"]["name"] == ["cdc", "idle"] and offset1["table"]["layout"] is not None

    # the server may now drop every binlog before the offset's: nothing the stream still needs is in them
    oldest = cdc_server.purge_all_but_newest(older_than=offset0["file"])
    assert binlog_number(oldest)[1] > binlog_number(offset0["file"])[1]
    writer.transactions(3)
    restarted = make_format("mysql-replication", cdc_server.uri, _options(
        cdc_server, "cdc.idle", json.dumps(offset1), "4901")).stream()
    more, offset2, error = drive(restarted, restarted.initial_offset())
    assert error is None and more
    assert min(r["seq"] for r in more) > max(r["seq"] for r in rows)
    # the changes before the purge and after it make the table the server has
    assert set(rebuild(rows + more)) == {r[0] for r in cdc_server.query("SELECT id FROM cdc.idle")}
    assert _at(offset2) == _end(cdc_server)


def test_follow_yields_advancing_offsets_for_an_idle_table(cdc_server: StreamServer) -> None:
    create_table(cdc_server, "cdc.quiet")
    start = _end(cdc_server)
    _noise(cdc_server, 50, rotate_every=20)
    offsets: list[dict[str, Any]] = []
    rows = 0
    for batch, offset in spark_logsource.follow(
            "mysql-replication", cdc_server.uri, stop_when_idle=True,
            **_options(cdc_server, "cdc.quiet", json.dumps({"file": start[0], "pos": start[1]}), "4902")):
        rows += batch.num_rows
        if offset is not None:
            offsets.append(offset)
    assert rows == 0
    assert offsets and _at(offsets[-1]) == _end(cdc_server)
    assert binlog_number(offsets[-1]["file"])[1] >= binlog_number(start[0])[1] + 2
