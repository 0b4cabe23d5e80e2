"""Fixtures of the typed-table tests: the workload of :mod:`tests.support.mysql_typed` under each row metadata."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.mysql_typed import TypedWorkload, run_typed_workload


@pytest.fixture(scope="session")
def typed_workloads(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TypedWorkload]:
    """The workload under each ``binlog_row_metadata`` (MariaDB's default NO_LOG, MINIMAL, FULL)."""
    out = {}
    for metadata in ("NO_LOG", "MINIMAL", "FULL"):
        out[metadata] = run_typed_workload(mariadb, metadata, tmp_path_factory.mktemp(f"typed_{metadata.lower()}"))
    mariadb.set_global("binlog_row_metadata", "NO_LOG")
    return out
