"""One Spark batch read of ``mysql-replication`` with ``view=state`` or ``view=table`` plans once, on the session's
streaming MariaDB 10.11: the driver walks the server's binlogs (a dump of their DDL) once per query, whatever Spark
calls between ``load()`` and ``collect()``, and a DDL landing after Spark took the schema is not read.

Spark builds the data source and asks its schema in one Python worker, plans the partitions in another, and reads
them in tasks: what counts is what the server saw. Its general log (as a table) names every connection's commands;
a task's dump comes on a connection that first asked the server's identity (``read_live_slice``), a planning walk
on one that did not.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

import spark_logsource
from tests.mysql_state.conftest import DB, StateWorkload, _write, select
from tests.mysql_state.test_state import assert_same_rows
from tests.support.servers.mariadb_stream import CDC_PASSWORD, StreamServer

pytestmark = pytest.mark.spark

SERVER_ID = "4950"
#: The query a task's connection asks before it dumps (``ReplicationClient.identity``).
IDENTITY = "SELECT VERSION(), @@GLOBAL.server_id"


@pytest.fixture(scope="module")
def live(stream_mariadb: StreamServer) -> tuple[StreamServer, StateWorkload]:
    stream_mariadb.checkout({DB: True})
    out = StateWorkload([])
    _write(stream_mariadb, out)  # several binlogs, DDL among the changes
    out.files = stream_mariadb.binlog_files()
    assert len(out.files) >= 3
    return stream_mariadb, out


@contextlib.contextmanager
def general_log(server: StreamServer) -> Iterator[list[tuple[int, str, str]]]:
    """The server's general log while the block runs: (thread, command, argument) rows, filled when it ends."""
    output = server.query("SELECT @@GLOBAL.log_output")[0][0]
    server.execute("SET GLOBAL general_log = 0")
    server.execute("SET GLOBAL log_output = 'TABLE'")
    server.execute("TRUNCATE TABLE mysql.general_log")
    rows: list[tuple[int, str, str]] = []
    server.execute("SET GLOBAL general_log = 1")
    try:
        yield rows
    finally:
        server.execute("SET GLOBAL general_log = 0")
        rows.extend((int(t), str(c), str(a)) for t, c, a in server.query(
            "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log"))
        server.execute("TRUNCATE TABLE mysql.general_log")
        server.execute(f"SET GLOBAL log_output = '{output}'")


@contextlib.contextmanager
def server_side(server: StreamServer) -> Iterator[dict[str, list[str]]]:
    """What the server was asked while the block runs: the planning walks (dumps on connections that never asked
    the identity), the tasks' dumps, and the ``SHOW MASTER STATUS`` queries; filled when the block ends."""
    out: dict[str, list[str]] = {}
    with general_log(server) as rows:
        yield out
    tasks = {t for t, c, a in rows if c == "Query" and a == IDENTITY}
    out["walks"] = [a for t, c, a in rows if c == "Binlog Dump" and t not in tasks]
    out["task_dumps"] = [a for t, c, a in rows if c == "Binlog Dump" and t in tasks]
    out["master_status"] = [a for t, c, a in rows if c == "Query" and a == "SHOW MASTER STATUS"]


def _options(server: StreamServer, view: str, table: str, **options: Any) -> dict[str, Any]:
    return {"uri": server.uri, "password": CDC_PASSWORD, "serverId": SERVER_ID, "view": view,
            "table": f"{DB}.{table}", **options}


def _spark_reader(spark: Any, options: dict[str, Any]) -> Any:
    reader = spark.read.format("mysql-replication")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader


@pytest.mark.parametrize("view", ["state", "table"])
def test_one_spark_read_walks_the_binlogs_once(spark: Any, live: tuple[StreamServer, StateWorkload],
                                                view: str) -> None:
    server, _w = live
    options = _options(server, view, "items", **({"statePartitions": 2} if view == "state" else {}))
    with server_side(server) as asked:
        rows = _spark_reader(spark, options).load().collect()
    assert rows
    assert len(asked["walks"]) == 1, asked["walks"]  # the DDL walk, made for the schema, serves the plan
    assert len(asked["master_status"]) == 1  # one end: the schema's is the read's
    assert asked["task_dumps"]  # the tasks read (their dumps are told apart from the walk's)


@pytest.mark.parametrize("view", ["state", "table"])
def test_a_ddl_after_spark_took_the_schema_is_not_read(spark: Any, live: tuple[StreamServer, StateWorkload],
                                                       view: str) -> None:
    """Spark asks the schema at ``load()``; a column added before ``collect()`` and the changes after it are not
    in the read: it ends where the schema was planned, as a read with that ``endingPosition`` does."""
    server, _w = live
    table = f"drift_{view}"
    server.execute(f"CREATE TABLE {DB}.{table} (id INT PRIMARY KEY, v VARCHAR(10))")
    server.execute(f"INSERT INTO {DB}.{table} VALUES (1, 'a'), (2, 'b')")
    server.execute(f"UPDATE {DB}.{table} SET v = 'bb' WHERE id = 2")
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    before = select(server, table)
    df = _spark_reader(spark, _options(server, view, table)).load()  # the data source and its schema()
    schema = df.schema
    server.execute(f"ALTER TABLE {DB}.{table} ADD COLUMN extra INT")
    server.execute(f"INSERT INTO {DB}.{table} VALUES (3, 'c', 33)")
    server.execute(f"UPDATE {DB}.{table} SET v = 'z', extra = 1 WHERE id = 1")
    if view == "state":
        rows = [r.asDict() for r in df.collect()]
        for r in rows:
            assert r.pop("_corrupt_record") is None
        assert_same_rows(rows, before, f"{table} as Spark's schema names it")
        return
    ours = df.selectExpr("op", "after.id", "after.v", "before.v AS was", "source.pos", "_corrupt_record").collect()
    assert df.schema == schema and "extra" not in df.schema["after"].dataType.fieldNames()
    bounded = spark_logsource.read("mysql-replication", [], **_options(
        server, view, table, endingPosition=json.dumps({"file": file, "pos": int(pos)})))
    expected = [(r["op"], r["after"] and r["after"]["id"], r["after"] and r["after"]["v"],
                 r["before"] and r["before"]["v"], r["source"]["pos"], r["_corrupt_record"])
                for r in bounded.to_pylist()]
    assert sorted(map(repr, map(tuple, ours))) == sorted(map(repr, expected))
    assert [e[:4] for e in sorted(expected, key=lambda e: e[4])] == [("c", 1, "a", None), ("c", 2, "b", None),
                                                                    ("u", 2, "bb", "b")]
