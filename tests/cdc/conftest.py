"""Fixtures of the CDC tests: the workload of ``tests/cdc/workload.py`` on the session's MariaDB, read once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cdc.workload import CdcWorkload, run_cdc_workload


@pytest.fixture(scope="session")
def cdc_workload(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> CdcWorkload:
    """Written once per session; its binlogs are copies (later writes cannot touch them)."""
    return run_cdc_workload(mariadb, tmp_path_factory.mktemp("cdc_binlogs"))
