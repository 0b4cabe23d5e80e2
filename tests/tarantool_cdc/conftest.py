"""The CDC workload (``workload_cdc.lua``), run once per session by the real tarantool (Debian 2.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.servers.tarantool import TarantoolError, WorkloadResult, run_script

WORKLOAD = Path(__file__).resolve().parent / "workload_cdc.lua"


@pytest.fixture(scope="session")
def cdc_workload(tmp_path_factory: pytest.TempPathFactory) -> WorkloadResult:
    try:
        return run_script(WORKLOAD, tmp_path_factory.mktemp("tarantool_cdc"))
    except TarantoolError as exc:
        pytest.fail(str(exc))
