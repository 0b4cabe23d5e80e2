"""The ``view=state`` workload, run on the session's real MariaDB 10.11, with the server's own SELECTs.

A table with a primary key (``items``) and one without (``tally``) go through inserts, updates (one changes the
primary key), deletes, multi-statement transactions (one rolled back), an ALTER ADD COLUMN and a binlog rotation.
At a middle point the workload records ``SHOW MASTER STATUS``, ``@@gtid_binlog_pos``, the server's clock and
``SELECT *`` of both tables; at the end, ``SELECT *`` again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.mysql_typed import TypedWorkload, run_typed_workload
from tests.support.waiting import expect

DB = "statedb"
TABLES = ("items", "tally", "gone")


@dataclass
class Point:
    """What the server said at one moment: its binlog position, GTID state, clock and tables."""

    file: str
    pos: int
    gtid: str
    clock: int  # UNIX_TIMESTAMP() at the point: every transaction before it began at or before this second
    tables: dict[str, list[dict[str, Any]]]


@dataclass
class StateWorkload:
    files: list[Path]
    middle: Point | None = None
    final: Point | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def select(server: Any, table: str) -> list[dict[str, Any]]:
    with server._conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {DB}.{table}")
        columns = [d[0] for d in cur.description]
        return [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]


def point(server: Any) -> Point:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    gtid = server.query("SELECT @@gtid_binlog_pos")[0][0]
    clock = int(server.query("SELECT UNIX_TIMESTAMP()")[0][0])
    return Point(file, int(pos), gtid, clock, {t: select(server, t) for t in TABLES})


def _transaction(server: Any, *statements: str, commit: bool = True) -> None:
    server.execute("BEGIN")
    for sql in statements:
        server.execute(sql)
    server.execute("COMMIT" if commit else "ROLLBACK")


def _write(server: Any, out: StateWorkload) -> None:
    server.execute("SET time_zone = '+00:00'")  # TIMESTAMP values come back in UTC, as the binlog holds them
    server.execute(f"DROP DATABASE IF EXISTS {DB}")
    server.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
    server.execute(f"""CREATE TABLE {DB}.items (
        id INT NOT NULL, region CHAR(2) NOT NULL, name VARCHAR(40), qty SMALLINT UNSIGNED, price DECIMAL(12,3),
        seen DATETIME(6), stamp TIMESTAMP(3) NULL, blob_ BLOB, doc JSON, PRIMARY KEY (region, id))""")
    server.execute(f"CREATE TABLE {DB}.tally (k INT, tag VARCHAR(10))")  # no primary key
    server.execute(f"CREATE TABLE {DB}.noise (id INT PRIMARY KEY, v INT)")  # another table's rows in between
    server.execute(f"CREATE TABLE {DB}.gone (id INT PRIMARY KEY, v VARCHAR(5))")  # emptied by a TRUNCATE
    values = ", ".join(
        f"({i}, '{'eu' if i % 2 else 'us'}', 'item {i} é', {i * 3}, {i}.125, '2024-01-{1 + i % 28:02d} 10:00:0{i % 10}"
        f".{i:06d}', '2030-06-01 00:00:{i % 60:02d}.5', x'{i:04x}00ff', '{{\"n\": {i}, \"tags\": [\"a\", {i}.5]}}')"
        for i in range(1, 41))
    server.execute(f"INSERT INTO {DB}.items VALUES {values}")
    server.execute(f"INSERT INTO {DB}.noise VALUES (1, 1), (2, 2)")
    server.execute(f"INSERT INTO {DB}.tally VALUES (1, 'a'), (1, 'a'), (2, 'b'), (3, NULL)")
    server.execute(f"INSERT INTO {DB}.gone VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    server.flush_logs()  # a table's changes span three binlogs: its inserts, the middle, the end
    _transaction(server, f"UPDATE {DB}.items SET qty = qty + 1, name = CONCAT(name, '+') WHERE id <= 10",
                 f"DELETE FROM {DB}.items WHERE id IN (11, 12)",
                 f"INSERT INTO {DB}.items (id, region, name) VALUES (41, 'eu', 'late')",
                 f"UPDATE {DB}.noise SET v = v + 1")
    server.execute(f"UPDATE {DB}.items SET id = 500, region = 'jp' WHERE id = 5")  # the key changes
    server.execute(f"DELETE FROM {DB}.tally WHERE k = 1 LIMIT 1")  # one of two equal rows
    _transaction(server, f"DELETE FROM {DB}.items WHERE id > 30", commit=False)  # rolled back: not logged
    middle = out.middle = point(server)
    # later transactions begin at a later second than the middle point: asOf=<that time> is the middle point
    expect(lambda: int(server.query("SELECT UNIX_TIMESTAMP()")[0][0]) > middle.clock, 10, "the next second")
    server.execute(f"UPDATE {DB}.items SET price = -price, stamp = NULL WHERE id BETWEEN 20 AND 25")
    server.flush_logs()
    server.execute(f"ALTER TABLE {DB}.items ADD COLUMN note VARCHAR(20) AFTER name")
    _transaction(server, f"UPDATE {DB}.items SET note = CONCAT('n', id) WHERE id % 3 = 0",
                 f"INSERT INTO {DB}.items (id, region, name, note, qty, doc) VALUES (42, 'us', 'new', 'fresh', 65535,"
                 " '{\"deep\": {\"x\": [1, 2, {\"y\": null}]}}')",
                 f"DELETE FROM {DB}.items WHERE id IN (2, 3)")
    server.execute(f"UPDATE {DB}.items SET id = 5, region = 'eu', note = 'back' WHERE id = 500")
    server.execute(f"UPDATE {DB}.tally SET k = 30, tag = 'c' WHERE k = 3")
    server.execute(f"INSERT INTO {DB}.tally VALUES (2, 'b')")
    server.execute(f"DELETE FROM {DB}.noise")
    server.execute(f"TRUNCATE TABLE {DB}.gone")
    server.execute(f"INSERT INTO {DB}.gone VALUES (7, 'x')")
    # DDL after the last change of most rows: the state's rows follow it as the server's rows do
    server.execute(f"ALTER TABLE {DB}.items CHANGE name title VARCHAR(40), RENAME COLUMN seen TO seen_at")
    server.execute(f"ALTER TABLE {DB}.tally RENAME COLUMN tag TO label")
    server.execute(f"ALTER TABLE {DB}.gone DROP COLUMN v")
    server.execute(f"ALTER TABLE {DB}.gone ADD COLUMN v VARCHAR(5)")  # the old values are gone: NULL
    server.execute(f"UPDATE {DB}.items SET title = 'renamed' WHERE id = 7")
    out.final = point(server)


@pytest.fixture(scope="session")
def state_workload(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> StateWorkload:
    out = StateWorkload([])
    dest = tmp_path_factory.mktemp("state")
    out.files = mariadb.run_workload(lambda srv: _write(srv, out),
                                     {"binlog_row_metadata": "NO_LOG", "binlog_row_image": "FULL"}, dest=dest)
    assert len(out.files) >= 3  # the FLUSH BINARY LOGS after the inserts and in the middle
    return out


@pytest.fixture(scope="session")
def typed_no_log(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> TypedWorkload:
    """The every-type workload of ``tests/mysql_typed`` (renames, drops, retypes), under NO_LOG metadata."""
    return run_typed_workload(mariadb, "NO_LOG", tmp_path_factory.mktemp("state_typed"))


def as_utc(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
