"""Fixtures of the binlog tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.mysql_workload import Workload, build_workload


@pytest.fixture(scope="session")
def workload(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> Workload:
    """The shared workload's binlog, written once per session by the session's MariaDB (a copy: later writes cannot
    touch it), with mariadb-binlog's listing of it."""
    return build_workload(mariadb, tmp_path_factory)
