"""The streaming tests' MariaDB 10.11 (``tests/support/servers/mariadb_stream.py``): ROW format,
``binlog_row_metadata=FULL``, a small ``max_binlog_size``, a replication user with only REPLICATION SLAVE and BINLOG
MONITOR; the session's shared one, lent to each module with the databases ``shop`` and ``other`` made anew, or one of
the module's own where it needs that (:data:`OWN_SERVER`). And a writer thread running multi-row and multi-statement
transactions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.mysql_cdc import MySQLWriterThread
from tests.support.servers.mariadb_stream import (  # noqa: F401  (the names the streaming tests import from here)
    CDC_PASSWORD,
    CDC_USER,
    MAX_BINLOG_SIZE,
    StreamServer,
    replica_user_server,
)

#: Modules that get a server of their own, and why (the shared one is lent to the others).
OWN_SERVER = {
    "test_live": "its first live read starts at the server's first binlog and checks the name mysql-bin.000001",
    "test_reconnect": "it stops the server, holds its port and starts it again",
    "test_tail": "its directory reads start at the first file, whose GTID list must be empty (a data-loss message "
                 "names a position without a GTID)",
}


class Writer(MySQLWriterThread):
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


@pytest.fixture(scope="module")
def stream_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    """The streaming server of this module: the session's shared one, checked out for it, or one of its own."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    if module in OWN_SERVER:
        with replica_user_server(tmp_path_factory, "mariadb-stream") as server:
            server.execute("CREATE USER 'noslave'@'%' IDENTIFIED BY 'pw'")
            server.execute("GRANT BINLOG MONITOR ON *.* TO 'noslave'@'%'")
            server.reset_tables()
            yield server
        return
    shared: StreamServer = request.getfixturevalue("stream_mariadb")
    shared.execute("CREATE USER IF NOT EXISTS 'noslave'@'%' IDENTIFIED BY 'pw'")
    shared.execute("GRANT BINLOG MONITOR ON *.* TO 'noslave'@'%'")
    shared.checkout({"shop": False, "other": False})
    shared.reset_tables()
    yield shared
