"""Fixtures of the live replication tests: the session's real Tarantool 2.6 server (``live_tarantool`` in
``tests/support/servers/tarantool_live.py``; tests read vclock ranges of their own writes, and each module finds the
spaces ``t`` and ``sy`` empty), or one per test for tests that kill, pause or garbage-collect it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def live_server(live_tarantool: LiveTarantool) -> LiveTarantool:
    return live_tarantool.checkout(truncate=("t", "sy"))


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[LiveTarantool]:
    """A server of its own for tests that kill, pause or garbage-collect it."""
    server = LiveTarantool(tmp_path / "srv", checkpoint_count=1)
    server.start()
    yield server
    server.stop(kill=True)
