"""The typed-views workload, run once per session by the real tarantool (Debian 2.6), and its captures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest

from tests.support.servers.tarantool import TarantoolError, WorkloadResult, run_script

WORKLOAD = Path(__file__).resolve().parent / "workload_typed.lua"
TAGS = ("a", "b", "c")


@dataclass(frozen=True)
class Capture:
    """``box.space.<space>:select()`` and ``:format()`` taken by the workload when ``box.info.lsn`` was ``lsn``."""

    tag: str
    lsn: int
    tuples: dict[str, list[list[Any]]]
    formats: dict[str, list[dict[str, Any]]]


def unpack_tarantool(data: bytes) -> Any:
    """MessagePack written by tarantool → Python, with MP_EXT decimal / uuid decoded by the oracle's decoder."""
    from tests.support.oracle.tarantool_xlog import unpack

    return unpack(data)


@pytest.fixture(scope="session")
def typed_workload(tmp_path_factory: pytest.TempPathFactory) -> WorkloadResult:
    try:
        return run_script(WORKLOAD, tmp_path_factory.mktemp("tarantool_typed"))
    except TarantoolError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def captures(typed_workload: WorkloadResult) -> list[Capture]:
    d = typed_workload.directory
    out = []
    for tag in TAGS:
        tuples = {s: unpack_tarantool((d / f"{tag}_{s}.mp").read_bytes()) for s in ("users", "kv")}
        formats = {s: msgpack.unpackb((d / f"{tag}_{s}.format.mp").read_bytes(), raw=False)
                   for s in ("users", "kv")}
        out.append(Capture(tag, int((d / f"{tag}.lsn").read_text()), tuples, formats))
    return out
