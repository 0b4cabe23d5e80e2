"""A throwaway MariaDB server on loopback for the benchmark and ``samples/make_mysql_samples.sh``.

There is one server starter in the project, the test suite's :class:`tests.support.servers.mariadb.MariaDBServer`
(``mariadb-install-db`` + ``mariadbd --no-defaults`` in a private datadir, ``binlog_format=ROW``, server id 1,
loopback port and Unix socket). This module only adds what a benchmark needs on top of it:

* a datadir kept between runs (:func:`open_server` restarts the server on it), so a cached binlog is streamed by
  the very server that wrote it;
* an account reachable over TCP for python-mysql-replication (``root`` only logs in over the Unix socket).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.servers.mariadb import MariaDBServer  # noqa: E402  (needs the repository root on sys.path)

log = logging.getLogger(__name__)

REPLICATION_USER = "bench"
REPLICATION_PASSWORD = "bench"


def open_server(base: Path) -> MariaDBServer:
    """Start mariadbd in ``base`` (created on first use, reused afterwards) with a TCP replication account."""
    server = MariaDBServer(base)
    if (server.datadir / "mysql").is_dir():
        log.info("restarting mariadbd on the kept datadir %s", server.datadir)
    server.start()
    server.execute(f"CREATE USER IF NOT EXISTS '{REPLICATION_USER}'@'127.0.0.1' "
                   f"IDENTIFIED BY '{REPLICATION_PASSWORD}'")
    server.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{REPLICATION_USER}'@'127.0.0.1'")
    return server


def tcp_settings(server: MariaDBServer) -> dict[str, Any]:
    """pymysql connection settings of the replication account (loopback TCP)."""
    return {"host": "127.0.0.1", "port": server.port, "user": REPLICATION_USER, "passwd": REPLICATION_PASSWORD}
