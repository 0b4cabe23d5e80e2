"""Fixtures of the snapshot tests: the session's MariaDB (``tests/support/servers/mariadb.py``) with a user for the
snapshot, a table of many types, and a writer that changes it (inserts, updates, key changes, deletes) while the
chunks are read."""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from spark_logsource.mysql.stream.client import ConnectionSettings, parse_uri
from tests.support.writer_thread import WriterThread

log = logging.getLogger(__name__)

DB = "snap"
USER = "snapper"
PASSWORD = "Pw-snap-91xq"
TYPED_TABLE = f"{DB}.many"
#: Every kind of the type mapping (docs/formats/mysql-typed.md) that MariaDB has.
TYPED_DDL = (
    f"CREATE TABLE {TYPED_TABLE} (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, "
    "su SMALLINT UNSIGNED, mi MEDIUMINT, ii INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, "
    "dc DECIMAL(12,3), dw DECIMAL(38,10), dt DATE, dtm DATETIME(6), dts DATETIME, ts TIMESTAMP(6) NULL DEFAULT NULL, "
    "tm TIME(3), yr YEAR, c CHAR(5), vc VARCHAR(40), tx TEXT, lat VARCHAR(10) CHARACTER SET latin1, bn BINARY(4), "
    "vb VARBINARY(20), bl BLOB, en ENUM('a','b','c'), st SET('x','y','z'), bt BIT(10), js JSON, ip INET6)"
)
TYPED_COLUMNS = ("id", "ti", "tu", "si", "su", "mi", "ii", "iu", "bi", "bu", "f", "d", "dc", "dw", "dt", "dtm", "dts",
                 "ts", "tm", "yr", "c", "vc", "tx", "lat", "bn", "vb", "bl", "en", "st", "bt", "js", "ip")
INITIAL_ROWS = 3000
KEY_SPACE = 6000


def typed_values(r: random.Random, key: int) -> tuple[Any, ...]:
    """One row of the typed table: extremes, NULLs, non-ASCII text, bytes with zeros."""
    def maybe(value: Any) -> Any:
        return None if r.random() < 0.1 else value

    texts = ["", "plain", "naïve ☃", "tab\there", "quote ' \" \\", "日本語テキスト", "x" * 40]
    return (
        key, maybe(r.choice([-128, 0, 127, r.randint(-128, 127)])), maybe(r.choice([0, 255, r.randint(0, 255)])),
        maybe(r.randint(-32768, 32767)), maybe(r.choice([65535, r.randint(0, 65535)])),
        maybe(r.randint(-8388608, 8388607)), maybe(r.choice([-2147483648, r.randint(-2**31, 2**31 - 1)])),
        maybe(r.choice([4294967295, r.randint(0, 2**32 - 1)])),
        maybe(r.choice([-2**63, 2**63 - 1, r.randint(-2**63, 2**63 - 1)])),
        maybe(r.choice([2**64 - 1, 2**63, r.randint(0, 2**64 - 1)])),
        maybe(r.choice([1.2345678, -3.4e38, 16777217.0, r.uniform(-1e6, 1e6)])),
        maybe(r.choice([0.1 + 0.2, 1e-300, -2.2250738585072014e-308, r.uniform(-1e12, 1e12)])),
        maybe(Decimal(r.randint(-10**11, 10**11)) / 1000), maybe(Decimal(r.randint(-10**37, 10**37)) / 10**10),
        maybe(dt.date(r.randint(1000, 9999), r.randint(1, 12), r.randint(1, 28))),
        maybe(dt.datetime(r.randint(1000, 9999), r.randint(1, 12), r.randint(1, 28), r.randint(0, 23),
                          r.randint(0, 59), r.randint(0, 59), r.randint(0, 999999))),
        maybe(dt.datetime(r.randint(1000, 9999), 2, 3, 4, 5, 6)),
        maybe(f"{r.randint(1971, 2037)}-0{r.randint(1, 9)}-1{r.randint(0, 9)} 0{r.randint(0, 9)}:30:00."
              f"{r.randint(0, 999999):06d}"),
        maybe(r.choice(["-838:59:59.000", "838:59:59", "-00:00:01.5", f"{r.randint(0, 99)}:{r.randint(0, 59)}:07.25"])),
        maybe(r.choice([1901, 2155, r.randint(1901, 2155)])),
        maybe(r.choice(["", "ab", "ab  ", "é"])), maybe(r.choice(texts)), maybe(r.choice(texts) * r.randint(1, 50)),
        maybe(r.choice(["café", "plain", ""])),
        maybe(r.choice([b"ab", b"\x00\x01\x02\x03", b"\xff\xfe\x00\x01", b""])),
        maybe(r.choice([b"a\x00", b"\x00", bytes(range(20)), b""])), maybe(bytes(r.randint(0, 255) for _ in range(50))),
        maybe(r.choice(["a", "b", "c"])), maybe(r.choice(["", "x", "x,z", "x,y,z"])),
        maybe(r.randint(0, 1023)),
        maybe(r.choice(['{"a": 1, "b": [true, null, 1.50]}', "[]", '"text"', '{"k": {"n": -0.001e3}}',
                        "123456789012345678901234567890"])),
        maybe(r.choice(["::1", "2001:db8::ff00:42:8329", "::ffff:192.0.2.1"])),
    )


def insert_sql(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"


class TypedWriter(WriterThread):
    """A thread that keeps changing the typed table, one transaction at a time, under :attr:`lock` (a test holds
    the lock to find the table still); it knows the table's keys, so a key change never collides."""

    name = "snapshot-writer"

    def __init__(self, server: Any, keys: set[int], *, seed: int = 11) -> None:
        super().__init__(server, seed=seed)
        self.keys = set(keys)
        self.lock = threading.Lock()

    def _free_key(self) -> int:
        while True:
            key = self.random.randint(1, KEY_SPACE)
            if key not in self.keys:
                return key

    def run_once(self, cur: Any) -> None:
        r = self.random
        cur.execute("BEGIN")
        for _ in range(r.randint(1, 4)):
            what = r.random()
            existing = sorted(self.keys)
            if what < 0.3 or not existing:
                key = self._free_key()
                cur.execute(insert_sql(TYPED_TABLE, TYPED_COLUMNS), typed_values(r, key))
                self.keys.add(key)
            elif what < 0.6:
                key = r.choice(existing)
                values = typed_values(r, key)
                cols = r.sample(range(1, len(TYPED_COLUMNS)), 5)
                cur.execute(f"UPDATE {TYPED_TABLE} SET {', '.join(f'{TYPED_COLUMNS[c]} = %s' for c in cols)} "
                            "WHERE id = %s", (*[values[c] for c in cols], key))
            elif what < 0.8:
                old, new = r.choice(existing), self._free_key()
                cur.execute(f"UPDATE {TYPED_TABLE} SET id = %s, vc = %s WHERE id = %s", (new, f"moved {old}", old))
                self.keys.discard(old)
                self.keys.add(new)
            else:
                key = r.choice(existing)
                cur.execute(f"DELETE FROM {TYPED_TABLE} WHERE id = %s", (key,))
                self.keys.discard(key)
        cur.execute("COMMIT")

    def _run(self) -> None:
        import pymysql

        try:
            conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True,
                                   charset="utf8mb4")
            try:
                with conn.cursor() as cur:
                    cur.execute("SET SESSION time_zone = '+00:00'")
                    while not self._stop.is_set():
                        with self.lock:
                            self.run_once(cur)
                        self.transactions += 1
            finally:
                conn.close()
        except BaseException as exc:  # reported by stop()
            log.exception("writer failed")
            self.error = exc


@pytest.fixture(scope="module")
def snap_server(mariadb: Any) -> Iterator[Any]:
    """The session's MariaDB with the database ``snap`` (made anew) and the snapshot's users."""
    mariadb.execute(f"DROP DATABASE IF EXISTS {DB}")
    mariadb.execute(f"CREATE DATABASE {DB}")
    for user in (USER, "nosel"):
        mariadb.execute(f"DROP USER IF EXISTS '{user}'@'%'")
    mariadb.execute(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'")
    mariadb.execute(f"GRANT SELECT ON {DB}.* TO '{USER}'@'%'")
    mariadb.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{USER}'@'%'")
    mariadb.execute(f"CREATE USER 'nosel'@'%' IDENTIFIED BY '{PASSWORD}-no'")
    mariadb.execute("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'nosel'@'%'")
    yield mariadb


@pytest.fixture()
def settings(snap_server: Any) -> ConnectionSettings:
    return parse_uri(f"mysql://{USER}@127.0.0.1:{snap_server.port}", PASSWORD)


class HeldSnapshot:
    """A consistent snapshot the test holds open (root, over the socket): the table as of its binlog position."""

    def __init__(self, server: Any) -> None:
        import pymysql

        self.conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", autocommit=True,
                                    charset="utf8mb4")
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            status = dict(cur.fetchall())
        self.position = (status["Binlog_snapshot_file"], int(status["Binlog_snapshot_position"]))

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def close(self) -> None:
        self.conn.close()
