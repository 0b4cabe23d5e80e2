"""Faults while a live dump is running: the dump thread killed (``KILL``), a second reader taking the same server id.
Each ends in a clear :class:`SourceError` naming the server and the position, never a hang or a silent short read;
a killed dump is reconnected and resumed after its last event (``reconnectTimeout``), each row once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.errors import SourceError
from spark_logsource.mysql.replication_format import LiveSlice, read_live_slice
from tests.mysql_stream.conftest import CDC_PASSWORD, MAX_BINLOG_SIZE

pytestmark = [pytest.mark.server]

TRANSACTIONS = 6000


@pytest.fixture(scope="module")
def big_file(stream_server: Any) -> tuple[str, int]:
    """One binlog file holding many small transactions (far more events than the client's read-ahead)."""
    import pymysql

    stream_server.execute("SET GLOBAL max_binlog_size = 1073741824")
    stream_server.flush_logs()
    name = stream_server.binlog_files()[-1].name
    conn = pymysql.connect(unix_socket=str(stream_server.socket_path), user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            for i in range(TRANSACTIONS):
                # 4 KiB a row: the file (~25 MB) is far more than socket buffers and the read-ahead queue hold
                cur.execute("INSERT INTO shop.orders (customer, note) VALUES (%s, %s)", (f"f{i}", "z" * 4096))
    finally:
        conn.close()
    stream_server.flush_logs()
    stream_server.execute(f"SET GLOBAL max_binlog_size = {MAX_BINLOG_SIZE}")
    size = dict(stream_server.query("SHOW BINARY LOGS"))[name]
    return name, int(size)


def _dump_threads(server: Any) -> list[int]:
    return [row[0] for row in server.query("SHOW PROCESSLIST") if row[4] == "Binlog Dump"]


def _slow_read(server: Any, name: str, size: int, server_id: int, started: threading.Event,
               result: dict[str, Any], reconnect_timeout: str = "0") -> None:
    fmt = make_format("mysql-replication", [], {"uri": server.uri, "password": CDC_PASSWORD, "batchSize": "20",
                                                "reconnectTimeout": reconnect_timeout, "rowFormat": "json"})
    rows = 0
    result["table"] = []
    try:
        for batch in read_live_slice(fmt.settings, LiveSlice(name, 4, size, server_id), fmt.live_options):
            rows += len(batch)
            result["table"].append(batch)
            started.set()
            time.sleep(0.01)
    except SourceError as exc:
        result["error"] = exc
    finally:
        started.set()
        result["rows"] = rows


def test_killed_dump_thread_is_a_clear_error(stream_server: Any, big_file: tuple[str, int]) -> None:
    name, size = big_file
    started, result = threading.Event(), {}
    reader = threading.Thread(target=_slow_read, args=(stream_server, name, size, 4500, started, result))
    reader.start()
    assert started.wait(60)
    for thread_id in _dump_threads(stream_server):
        stream_server.execute(f"KILL {thread_id}")
    reader.join(120)
    assert not reader.is_alive(), "no hang"
    error = result.get("error")
    assert error is not None, "the killed dump did not end the read silently short"
    assert result["rows"] < TRANSACTIONS, "the server was killed before it had sent everything"
    assert f"127.0.0.1:{stream_server.port}" in str(error) and name in str(error)


def test_killed_dump_thread_is_resumed_after_its_last_event(stream_server: Any, big_file: tuple[str, int]) -> None:
    """With ``reconnectTimeout`` (the default), a killed dump reconnects and resumes: every row once."""
    name, size = big_file
    started, result = threading.Event(), {}
    reader = threading.Thread(target=_slow_read, args=(stream_server, name, size, 4550, started, result, "60"))
    reader.start()
    assert started.wait(60)
    killed = _dump_threads(stream_server)
    for thread_id in killed:
        stream_server.execute(f"KILL {thread_id}")
    reader.join(300)
    assert not reader.is_alive(), "no hang"
    assert killed and "error" not in result, result.get("error")
    got = pa.Table.from_batches(result["table"])
    files = spark_logsource.read("mysql-binlog", str(stream_server.binlog_dir / name), rowFormat="json")
    assert got.num_rows == files.num_rows == TRANSACTIONS
    assert got.drop_columns(["file"]).equals(files.drop_columns(["file"]))


def test_two_readers_with_one_server_id(stream_server: Any, big_file: tuple[str, int]) -> None:
    """The server drops the older dump of a replica id when a newer one registers: the older reader fails
    clearly (its task would be retried); the newer reads everything."""
    name, size = big_file
    started, result = threading.Event(), {}
    older = threading.Thread(target=_slow_read, args=(stream_server, name, size, 4600, started, result))
    older.start()
    assert started.wait(60)
    fmt = make_format("mysql-replication", [], {"uri": stream_server.uri, "password": CDC_PASSWORD})
    newer = pa.Table.from_batches(list(read_live_slice(fmt.settings, LiveSlice(name, 4, size, 4600),
                                                       fmt.live_options)))
    older.join(120)
    assert not older.is_alive()
    assert "error" in result and "serverId" in str(result["error"])
    files = spark_logsource.read("mysql-binlog", str(stream_server.binlog_dir / name))
    assert newer.num_rows == files.num_rows == TRANSACTIONS
