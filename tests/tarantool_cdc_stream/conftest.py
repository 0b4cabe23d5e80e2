"""The view=space streaming tests' Tarantool 2.6: the session's server keeping one checkpoint (a snapshot collects the
xlogs before it), ``collecting_tarantool`` in ``tests/support/servers/tarantool_live.py``; every test creates spaces
of its own."""

from __future__ import annotations

import pytest

from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def cdc_server(collecting_tarantool: LiveTarantool) -> LiveTarantool:
    return collecting_tarantool.checkout()
