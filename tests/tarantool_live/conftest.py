"""Fixtures of the live replication tests: a real Tarantool 2.6 server per module, or per test for tests that
kill, pause or garbage-collect it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    server = LiveTarantool(tmp_path_factory.mktemp("live"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[LiveTarantool]:
    """A server of its own for tests that kill, pause or garbage-collect it."""
    server = LiveTarantool(tmp_path / "srv", checkpoint_count=1)
    server.start()
    yield server
    server.stop(kill=True)
