"""Batches of large tuples stay under the byte cap: Arrow's string and binary arrays hold less than 2 GiB each.

The file is written by the real Tarantool 2.6: 60 tuples of 200 KiB in one transaction (one block). With the
default 8192 rows per batch, only the byte cap cuts them; the cap is lowered for the test so that the same rule
is exercised with megabytes instead of gigabytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_logsource.arrow import batching
from spark_logsource.arrow.columns import variant_field
from spark_logsource.tarantool.read import reader
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches
from tests.support.servers.tarantool import run_script

pytestmark = pytest.mark.server

WORKLOAD = """
local s = box.schema.space.create('big')
s:create_index('pk')
box.begin()
for i = 1, 60 do s:insert{i, string.rep(string.char(65 + i % 26), 200 * 1024)} end
box.commit()
"""


@pytest.fixture(scope="module")
def big_xlog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("big_tuples")
    script = base / "big_tuples.lua"
    script.write_text(WORKLOAD)
    xlogs = run_script(script, base / "data").files_of(".xlog")
    assert xlogs
    return max(xlogs, key=lambda p: p.stat().st_size)


def _batches(path: Path, tuple_format: str) -> list:
    options = XlogReadOptions(tuple_format=tuple_format)
    with open(path, "rb") as source:
        return list(iter_file_batches(source, str(path), options=options))


def _value_bytes(batch, tuple_format: str) -> int:
    total = 0
    for field in batch.schema:
        column = batch.column(field.name)
        if field.type == variant_field(field.name).type and tuple_format == "variant":
            total += column.field("value").nbytes + column.field("metadata").nbytes
        elif field.name in ("key", "tuple", "ops", "extra"):
            total += column.nbytes
    return total


def test_default_cap_is_far_below_arrows_limit() -> None:
    assert batching.MAX_BATCH_BYTES * 4 <= 2**31


@pytest.mark.parametrize("tuple_format", ["variant", "json", "msgpack"])
def test_large_tuples_are_cut_by_bytes_not_rows(big_xlog: Path, tuple_format: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _batches(big_xlog, tuple_format)
    assert sum(len(b) for b in whole) >= 60 and len(whole) == 1  # one batch under the default cap
    cap = 1 << 20
    monkeypatch.setattr(reader, "MAX_BATCH_BYTES", cap)
    capped = _batches(big_xlog, tuple_format)
    assert len(capped) > 10
    for batch in capped:
        assert _value_bytes(batch, tuple_format) <= cap * 1.05 or len(batch) == 1
    rows = [r for b in capped for r in b.to_pylist()]
    assert rows == [r for b in whole for r in b.to_pylist()]
