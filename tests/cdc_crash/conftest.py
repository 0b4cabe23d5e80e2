"""Servers of the crash tests: the session's streaming MariaDB 10.11 (:mod:`tests.support.servers.mariadb_stream`)
lent with the database ``crash`` made anew (they ALTER its tables), and the session's Tarantool 2.6 keeping one
checkpoint (``collecting_tarantool``; they create and change a space of their own, ``cr``)."""

from __future__ import annotations

import pytest

from tests.support.servers.mariadb_stream import StreamServer
from tests.support.servers.tarantool_live import LiveTarantool


@pytest.fixture(scope="module")
def crash_mariadb(stream_mariadb: StreamServer) -> StreamServer:
    stream_mariadb.checkout({"crash": True})
    return stream_mariadb


@pytest.fixture(scope="module")
def crash_tarantool(collecting_tarantool: LiveTarantool) -> LiveTarantool:
    return collecting_tarantool.checkout()
