"""The typed CDC streams' MariaDB 10.11: the session's streaming server (:mod:`tests.support.servers.mariadb_stream`,
the streaming tests' settings) lent to each module with the database ``cdc`` made anew (they ALTER, RENAME and
TRUNCATE their table in it), a table of several column types and a writer of multi-row, multi-statement transactions
on it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import SchemaChangeError
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from tests.support.servers.mariadb_stream import StreamServer

TABLE = "cdc.t"


@pytest.fixture(scope="module")
def cdc_server(stream_mariadb: StreamServer) -> StreamServer:
    stream_mariadb.checkout({"cdc": True})
    return stream_mariadb


def create_table(server: StreamServer, name: str = TABLE) -> None:
    server.execute(f"DROP TABLE IF EXISTS {name}")
    server.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), "
                   "at DATETIME(3), flag TINYINT, big BIGINT UNSIGNED)")


class TableWriter:
    """Multi-row and multi-statement transactions on one table (inserts, updates, deletes), seeded."""

    def __init__(self, server: StreamServer, name: str = TABLE, seed: int = 11) -> None:
        self.server = server
        self.name = name
        self.random = random.Random(seed)
        self.next_id = 1

    def transactions(self, n: int, column: str = "name") -> None:
        import pymysql

        r = self.random
        conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                for _ in range(n):
                    cur.execute("BEGIN")
                    rows = []
                    for _ in range(r.randint(1, 5)):
                        rows.append((self.next_id, f"n{self.next_id}", Decimal(r.randint(0, 99999)) / 100,
                                     r.choice([None, 0, 1, -5]), r.randint(0, 2**64 - 1)))
                        self.next_id += 1
                    cur.executemany(f"INSERT INTO {self.name} (id, {column}, amount, at, flag, big) "
                                    "VALUES (%s, %s, %s, NOW(3), %s, %s)", rows)
                    if r.random() < 0.6:
                        cur.execute(f"UPDATE {self.name} SET amount = amount + 1, {column} = CONCAT({column}, 'u') "
                                    "ORDER BY id DESC LIMIT 2")
                    if r.random() < 0.3:
                        cur.execute(f"DELETE FROM {self.name} ORDER BY id LIMIT 1")
                    cur.execute("COMMIT")
        finally:
            conn.close()


def drive(stream: LogStream, start: Offset, budget: ReadBudget | None = None
          ) -> tuple[list[dict[str, Any]], Offset, SchemaChangeError | None]:
    """Read ``stream`` from ``start`` range by range (as Spark's micro-batches do) until nothing new is complete or
    a schema change stops it: the rows, the last offset committed, the error."""
    rows: list[dict[str, Any]] = []
    cur = start
    while True:
        try:
            end = stream.latest_offset(cur, budget or ReadBudget(max_bytes=3000))
        except SchemaChangeError as exc:
            return rows, cur, exc
        if offset_json(end) == offset_json(cur):
            return rows, cur, None
        for slice_ in stream.plan(cur, end):
            for batch in stream.read_slice(slice_):
                assert batch.schema == stream.schema()
                rows.extend(pa.Table.from_batches([batch]).to_pylist())
        cur = end


def rebuild(rows: Sequence[dict[str, Any]], key: str = "id") -> dict[Any, dict[str, Any]]:
    """The table the changes make: the last change per key by ``seq``, deletes removed, a TRUNCATE empties it."""
    table: dict[Any, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row["op"] == "t":
            table.clear()
        elif row["op"] == "d":
            table.pop(row["before"][key], None)
        else:
            table[row["after"][key]] = row["after"]
    return table
