"""``index_id`` as Tarantool means it: a request that names a space and no index works on index 0 (the primary
key), so its row reads 0, not null; a row that names no space keeps null. Both decoders (C kernel and Python
reference: the ``twin`` fixture)."""

from __future__ import annotations

from pathlib import Path

import spark_logsource
from tests.support.twins import Twin

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tarantool"


def test_a_request_without_index_id_reads_index_0(twin: Twin) -> None:
    files = sorted(str(p) for p in FIXTURES.rglob("*.xlog"))
    table = spark_logsource.read("tarantool-xlog", files)  # bad fixtures give corrupt-record rows (no space)
    rows = table.select(["type", "space_id", "index_id"]).to_pylist()
    dml = [r for r in rows if r["space_id"] is not None]
    assert dml and all(r["index_id"] is not None for r in dml)
    assert any(r["index_id"] == 0 for r in dml)
    assert all(r["index_id"] is None for r in rows if r["space_id"] is None)
