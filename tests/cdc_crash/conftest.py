"""Servers of their own for the crash tests (they ALTER tables and change space formats: the shared servers must not
see that): a MariaDB 10.11 with the streaming settings and a Tarantool 2.6 keeping one checkpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mysql_stream.conftest import StreamServer, replica_user_server
from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def crash_mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    with replica_user_server(tmp_path_factory, "mariadb-crash", "crash") as server:
        yield server


@pytest.fixture(scope="module")
def crash_tarantool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    server = LiveTarantool(tmp_path_factory.mktemp("tarantool-crash"), checkpoint_count=1, wal_max_size=64 << 10)
    server.start()
    yield server
    server.stop(kill=True)
