"""Split property on real files: the union of iter_file_batches over consecutive [start, end) ranges equals the
whole-file read, row for row, no duplicates, no losses (plain, zstd, and damaged files in PERMISSIVE mode)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pytest

from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches, xlog_schema
from tests.support.tarantool_files import FIXTURES, b1_workload_files

OPTIONS = XlogReadOptions(tuple_format="msgpack", common=CommonOptions(mode=ParseMode.PERMISSIVE, batch_size=50))


def read_range(data: bytes, start: int, end: int | None) -> list[dict]:
    batches = list(iter_file_batches(io.BytesIO(data), "f", start=start, end=end, options=OPTIONS))
    for b in batches:
        assert b.num_rows <= 50
    return pa.Table.from_batches(batches, schema=xlog_schema("msgpack", "_corrupt_record")).to_pylist()


def read_in_splits(data: bytes, split: int) -> list[dict]:
    rows: list[dict] = []
    for start in range(0, len(data), split):
        rows += read_range(data, start, min(start + split, len(data)))
    return rows


def check_splits(data: bytes, sizes: list[int]) -> None:
    whole = read_range(data, 0, None)
    assert whole
    for size in sizes:
        assert read_in_splits(data, size) == whole, size


def test_small_plain_files_every_split_size() -> None:
    for rel in (
        "test/replication-luatest/gh_7932_data/good_xlog/00000000000000000000.xlog",
        "test/xlog/reader/crc.bad.xlog",
        "test/xlog/reader/eof.bad.xlog",
    ):
        data = (FIXTURES / rel).read_bytes()
        check_splits(data, [*range(1, 40), 64, 100, 255, 333, len(data)])


def test_zstd_snapshots() -> None:
    data = (FIXTURES / "test/box-luatest/upgrade/2.11.0/vshard/instance-001/00000000000000003049.snap").read_bytes()
    check_splits(data, [1, 5, 19, 100, 1000, 4096, len(data)])


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return b1_workload_files(tmp_path_factory)


def test_many_block_xlog_from_tarantool(workload: list[Path]) -> None:
    data = max((p for p in workload if p.suffix == ".xlog"), key=lambda p: p.stat().st_size).read_bytes()
    assert data.count(b"\xd5\xba\x0b\xab") > 100
    check_splits(data, [3, 17, 58, 200, 777, 4096, 10000, len(data)])


def test_damaged_middle_block(workload: list[Path]) -> None:
    data = bytearray(max((p for p in workload if p.suffix == ".xlog"), key=lambda p: p.stat().st_size).read_bytes())
    middle = data.index(b"\xd5\xba\x0b", len(data) // 2)
    data[middle + 25] ^= 0xFF  # payload byte: checksum mismatch
    other = data.index(b"\xd5\xba\x0b", len(data) * 3 // 4)
    data[other + 1] = 0x00  # broken magic: garbage until the next block
    whole = read_range(bytes(data), 0, None)
    assert [r["offset"] for r in whole if r["_corrupt_record"]] == [middle, other]
    check_splits(bytes(data), [1, 7, 19, 20, 21, 64, 300, 1024, len(data)])
