"""Servers of their own for the crash tests (they ALTER tables and change space formats: the shared servers must not
see that): a MariaDB 10.11 with the streaming settings and a Tarantool 2.6 keeping one checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mysql_stream.conftest import CDC_PASSWORD, CDC_USER, StreamServer
from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def crash_mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    server = StreamServer(Path(tmp_path_factory.mktemp("mariadb-crash")))
    try:
        server.start()
    except Exception as exc:
        pytest.fail(f"cannot start mariadbd: {exc}")
    try:
        server.execute(f"CREATE USER '{CDC_USER}'@'%' IDENTIFIED BY '{CDC_PASSWORD}'")
        # SHOW BINLOG EVENTS needs BINLOG MONITOR; SHOW CREATE TABLE a privilege on the table
        server.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{CDC_USER}'@'%'")
        server.execute("CREATE DATABASE crash")
        server.execute(f"GRANT SELECT ON crash.* TO '{CDC_USER}'@'%'")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def crash_tarantool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    server = LiveTarantool(tmp_path_factory.mktemp("tarantool-crash"), checkpoint_count=1, wal_max_size=64 << 10)
    server.start()
    yield server
    server.stop(kill=True)
