"""One real Tarantool 2.6 server for the view=space streaming tests, keeping one checkpoint (a snapshot collects
the xlogs before it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def cdc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    server = LiveTarantool(tmp_path_factory.mktemp("cdc_stream"), checkpoint_count=1, wal_max_size=64 << 10)
    server.start()
    yield server
    server.stop()
