"""A MariaDB 10.11 of its own for the streaming tests (restarts, purges and rotations must not disturb the
session's shared server): ROW format, ``binlog_row_metadata=FULL``, a small ``max_binlog_size``, a replication
user with only REPLICATION SLAVE and BINLOG MONITOR, and a writer thread running multi-row and multi-statement
transactions."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers.mariadb import MariaDBServer
from tests.support.waiting import STATE_TIMEOUT
from tests.support.writer_thread import WriterThread

log = logging.getLogger(__name__)

CDC_USER = "cdc"
CDC_PASSWORD = "s3cret-Pw_42"
#: Small files: a writer rotates the binlog every few transactions.
MAX_BINLOG_SIZE = 16384


class StreamServer(MariaDBServer):
    """The test server, configured for streaming after every (re)start."""

    def start(self) -> None:
        super().start()
        self.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        self.execute(f"SET GLOBAL max_binlog_size = {MAX_BINLOG_SIZE}")
        self._conn.close()
        self._conn = self._connect()

    @property
    def uri(self) -> str:
        return f"mysql://{CDC_USER}@127.0.0.1:{self.port}"

    def purge_all_but_newest(self, older_than: str) -> str:
        """PURGE BINARY LOGS up to the newest file until ``older_than`` is gone (the server keeps files InnoDB or a
        dump thread still needs for a moment); returns the oldest file left."""
        deadline = time.monotonic() + STATE_TIMEOUT
        while True:
            newest = self.binlog_files()[-1].name
            self.execute(f"PURGE BINARY LOGS TO '{newest}'")
            oldest = self.binlog_files()[0].name
            if oldest > older_than or time.monotonic() > deadline:
                return oldest
            time.sleep(0.5)

    def reset_tables(self) -> None:
        self.execute("CREATE DATABASE IF NOT EXISTS shop")
        self.execute("CREATE DATABASE IF NOT EXISTS other")
        self.execute("CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY AUTO_INCREMENT, "
                     "customer VARCHAR(64), amount DECIMAL(12,2), note TEXT, at DATETIME(3))")
        self.execute("CREATE TABLE IF NOT EXISTS shop.items (id INT PRIMARY KEY AUTO_INCREMENT, order_id INT, "
                     "sku VARCHAR(32), qty SMALLINT UNSIGNED)")
        self.execute("CREATE TABLE IF NOT EXISTS other.log (id INT PRIMARY KEY AUTO_INCREMENT, msg VARCHAR(200))")


class Writer(WriterThread):
    """A thread that keeps committing multi-row and multi-statement transactions until stopped."""

    name = "binlog-writer"

    def __init__(self, server: StreamServer, *, seed: int = 7, pause: float = 0.0) -> None:
        super().__init__(server, seed=seed)
        self.pause = pause

    def run_once(self, conn: Any) -> None:
        r = self.random
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            n = r.randint(1, 6)
            cur.executemany("INSERT INTO shop.orders (customer, amount, note, at) VALUES (%s, %s, %s, NOW(3))",
                            [(f"c{r.randint(1, 50)}", f"{r.randint(0, 99999)}.{r.randint(0, 99):02d}",
                              "n" * r.randint(0, 300)) for _ in range(n)])
            cur.execute("INSERT INTO shop.items (order_id, sku, qty) SELECT id, CONCAT('sku-', id), MOD(id, 7) "
                        "FROM shop.orders ORDER BY id DESC LIMIT %s", (n,))
            if r.random() < 0.3:
                cur.execute("UPDATE shop.orders SET amount = amount + 1 ORDER BY id DESC LIMIT 3")
            if r.random() < 0.2:
                cur.execute("DELETE FROM shop.items ORDER BY id LIMIT 1")
            if r.random() < 0.3:
                cur.execute("INSERT INTO other.log (msg) VALUES (%s)", (f"tx {self.transactions}",))
            cur.execute("COMMIT")
        self.transactions += 1

    def _run(self) -> None:
        import pymysql

        try:
            conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
            try:
                while not self._stop.is_set():
                    self.run_once(conn)
                    if self.pause:
                        self._stop.wait(self.pause)
            finally:
                conn.close()
        except BaseException as exc:  # reported by stop()
            log.exception("writer failed")
            self.error = exc


@contextlib.contextmanager
def replica_user_server(tmp_path_factory: pytest.TempPathFactory, name: str,
                        database: str | None = None) -> Iterator[StreamServer]:
    """A started MariaDB whose CDC user may read the binlogs as a replica (REPLICATION SLAVE, and BINLOG MONITOR
    for SHOW BINLOG EVENTS) and, given ``database``, SELECT its tables (SHOW CREATE TABLE needs it); stopped after."""
    server = StreamServer(Path(tmp_path_factory.mktemp(name)))
    try:
        server.start()
    except Exception as exc:
        pytest.fail(f"cannot start mariadbd: {exc}")
    try:
        server.execute(f"CREATE USER '{CDC_USER}'@'%' IDENTIFIED BY '{CDC_PASSWORD}'")
        server.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{CDC_USER}'@'%'")
        if database is not None:
            server.execute(f"CREATE DATABASE {database}")
            server.execute(f"GRANT SELECT ON {database}.* TO '{CDC_USER}'@'%'")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    with replica_user_server(tmp_path_factory, "mariadb-stream") as server:
        server.execute("CREATE USER 'noslave'@'%' IDENTIFIED BY 'pw'")
        server.execute("GRANT BINLOG MONITOR ON *.* TO 'noslave'@'%'")
        server.reset_tables()
        yield server
