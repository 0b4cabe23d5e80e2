"""Damaged copies of real Tarantool files: no hang, FAILFAST names file + offset, PERMISSIVE keeps every good
block and emits one corrupt row per bad region, DROPMALFORMED skips and logs."""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path

import pyarrow as pa
import pytest

from spark_logsource.errors import ChecksumError, CorruptDataError, TruncatedDataError
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches, xlog_schema
from spark_logsource.tarantool.xlog import blocks
from spark_logsource.tarantool.xlog.blocks import Block, BlockScanner
from spark_logsource.tarantool.xlog.meta import read_meta
from tests.support.tarantool_files import FIXTURES, b1_workload_files

GH7932 = FIXTURES / "test/replication-luatest/gh_7932_data"
GOOD = GH7932 / "good_xlog/00000000000000000000.xlog"
READER = FIXTURES / "test/xlog/reader"


def read(data: bytes, mode: ParseMode, name: str = "damaged.xlog", verify: bool = True) -> list[dict]:
    options = XlogReadOptions(tuple_format="msgpack", common=CommonOptions(mode=mode, verify_checksums=verify))
    started = time.monotonic()
    batches = list(iter_file_batches(io.BytesIO(data), name, options=options))
    assert time.monotonic() - started < 10, "reading a damaged file took too long"
    schema = xlog_schema("msgpack", options.common.corrupt_column_or_none)
    return pa.Table.from_batches(batches, schema=schema).to_pylist()


def good_rows(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "_corrupt_record"} for r in rows if r["_corrupt_record"] is None]


def block_offsets(data: bytes) -> list[tuple[int, int]]:
    meta = read_meta(io.BytesIO(data), "x")
    return [
        (b.offset, b.size)
        for b in BlockScanner(io.BytesIO(data), "x", data_offset=meta.data_offset)
        if isinstance(b, Block)
    ]


def rows_by_block(rows: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["offset"], []).append(r)
    return out


@pytest.fixture(scope="module")
def small_zstd_xlog(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real xlog with both plain and zstd blocks (the first of the session's b1 workload)."""
    path = next(p for p in b1_workload_files(tmp_path_factory) if p.suffix == ".xlog")
    data = path.read_bytes()
    assert b"\xd5\xba\x0b\xba" in data and b"\xd5\xba\x0b\xab" in data
    return data


def test_truncation_at_every_offset_is_a_partial_tail() -> None:
    data = GOOD.read_bytes()
    clean = good_rows(read(data, ParseMode.PERMISSIVE))
    data_offset = read_meta(io.BytesIO(data), "x").data_offset
    ends = {off + size for off, size in block_offsets(data)}
    for cut in range(len(data)):
        piece = data[:cut]
        if cut == 0:
            assert read(piece, ParseMode.FAILFAST) == []
            continue
        if cut < data_offset:
            with pytest.raises(TruncatedDataError) as info:
                read(piece, ParseMode.FAILFAST)
            assert info.value.path == "damaged.xlog" and info.value.offset == 0
            continue
        rows = read(piece, ParseMode.FAILFAST)  # no error: a file being written
        complete = sum(1 for r in clean if r["offset"] + _size(data, r["offset"]) <= cut)
        assert [{k: v for k, v in r.items()} for r in rows] == [
            {k: v for k, v in r.items()} for r in clean[:complete]
        ], cut
        assert (cut in ends) or cut == data_offset or len(rows) == complete


def _size(data: bytes, offset: int) -> int:
    return dict(block_offsets(data))[offset]


def test_truncation_of_zstd_file_at_many_offsets(small_zstd_xlog: bytes) -> None:
    data = small_zstd_xlog
    clean = good_rows(read(data, ParseMode.PERMISSIVE))
    data_offset = read_meta(io.BytesIO(data), "x").data_offset
    sizes = dict(block_offsets(data))
    for cut in range(data_offset, len(data), 97):
        rows = good_rows(read(data[:cut], ParseMode.PERMISSIVE))
        expected = [r for r in clean if r["offset"] + sizes[r["offset"]] <= cut]
        assert rows == expected
        assert len(read(data[:cut], ParseMode.PERMISSIVE)) == len(expected)  # no corrupt rows


@pytest.mark.parametrize("which", ["plain", "zstd"])
def test_flipped_payload_byte(small_zstd_xlog: bytes, which: str) -> None:
    data = small_zstd_xlog
    clean = read(data, ParseMode.PERMISSIVE)
    magic = b"\xd5\xba\x0b\xab" if which == "plain" else b"\xd5\xba\x0b\xba"
    blocks_ = [(o, s) for o, s in block_offsets(data) if data[o : o + 4] == magic]
    for offset, size in blocks_[:: max(1, len(blocks_) // 5)]:
        damaged = bytearray(data)
        damaged[offset + 19 + (size - 19) // 2] ^= 0x5A
        damaged = bytes(damaged)
        with pytest.raises(ChecksumError) as info:
            read(damaged, ParseMode.FAILFAST)
        assert info.value.offset == offset and info.value.path == "damaged.xlog"
        rows = read(damaged, ParseMode.PERMISSIVE)
        corrupt = [r for r in rows if r["_corrupt_record"] is not None]
        assert len(corrupt) == 1 and corrupt[0]["offset"] == offset and corrupt[0]["file_type"] == "XLOG"
        assert "damaged.xlog at byte" in corrupt[0]["_corrupt_record"] and corrupt[0]["lsn"] is None
        assert good_rows(rows) == [r for r in good_rows(clean) if r["offset"] != offset]
        assert read(damaged, ParseMode.DROPMALFORMED) == [
            {k: v for k, v in r.items() if k != "_corrupt_record"} for r in good_rows(clean) if r["offset"] != offset
        ]


def test_absurd_length(small_zstd_xlog: bytes) -> None:
    data = small_zstd_xlog
    clean = good_rows(read(data, ParseMode.PERMISSIVE))
    offsets = block_offsets(data)
    offset, _ = offsets[len(offsets) // 2]
    damaged = data[: offset + 4] + b"\xce\xff\xff\xff\xff" + data[offset + 9 :]
    with pytest.raises(CorruptDataError) as info:
        read(damaged, ParseMode.FAILFAST)
    assert info.value.offset == offset
    rows = read(damaged, ParseMode.PERMISSIVE)
    assert [r["offset"] for r in rows if r["_corrupt_record"]] == [offset]
    assert good_rows(rows) == [r for r in clean if r["offset"] != offset]


def test_garbage_between_blocks_and_after_eof(small_zstd_xlog: bytes) -> None:
    data = small_zstd_xlog
    clean = good_rows(read(data, ParseMode.PERMISSIVE))
    offsets = block_offsets(data)
    at = offsets[3][0]
    junk = bytes(range(7, 7 + 40))
    damaged = data[:at] + junk + data[at:]
    rows = read(damaged, ParseMode.PERMISSIVE)
    assert [r["offset"] for r in rows if r["_corrupt_record"]] == [at]
    shifted = [{**r, "offset": r["offset"] + (len(junk) if r["offset"] >= at else 0)} for r in clean]
    assert good_rows(rows) == shifted
    assert data.endswith(blocks.EOF_MAGIC)
    tail = read(data + b"trailing", ParseMode.PERMISSIVE)
    assert [r["offset"] for r in tail if r["_corrupt_record"]] == [len(data)]
    assert good_rows(tail) == clean
    with pytest.raises(CorruptDataError) as info:
        read(data + b"trailing", ParseMode.FAILFAST)
    assert info.value.offset == len(data)


def test_zstd_expansion_limit(small_zstd_xlog: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    zstd_offsets = [o for o, _ in block_offsets(small_zstd_xlog) if small_zstd_xlog[o : o + 4] == blocks.ZSTD_MAGIC]
    assert zstd_offsets
    monkeypatch.setattr(blocks, "MAX_DECOMPRESSED_BYTES", 1000)
    rows = read(small_zstd_xlog, ParseMode.PERMISSIVE)
    corrupt = [r for r in rows if r["_corrupt_record"]]
    assert [r["offset"] for r in corrupt] == zstd_offsets
    assert all("expands beyond 1000 bytes" in r["_corrupt_record"] for r in corrupt)


def test_gh_7932_files() -> None:
    good = read(GOOD.read_bytes(), ParseMode.FAILFAST)
    not_finished = read((GH7932 / "not_finished_xlog/00000000000000000000.xlog").read_bytes(), ParseMode.FAILFAST)
    bad = read((GH7932 / "bad_xlog/00000000000000000000.xlog").read_bytes(), ParseMode.FAILFAST)
    assert (len(good), len(not_finished), len(bad)) == (10, 9, 9)
    assert not_finished == good[:9]  # the unfinished file is the good one without its last block and EOF marker
    # bad_xlog: replica 2's and replica 3's transactions interleave; framing is intact, TSNs say which is which.
    assert [(r["replica_id"], r["tsn"], r["is_commit"]) for r in bad[4:]] == [
        (3, 1, False),
        (3, 1, False),
        (2, 32050, False),
        (3, 1, True),
        (2, 32050, True),
    ]


def test_crc_bad_fixture(caplog: pytest.LogCaptureFixture) -> None:
    data = (READER / "crc.bad.xlog").read_bytes()
    with pytest.raises(ChecksumError) as info:
        read(data, ParseMode.FAILFAST, "crc.bad.xlog")
    assert info.value.offset == 320 and "crc.bad.xlog at byte 320" in str(info.value)
    rows = read(data, ParseMode.PERMISSIVE)
    assert len(rows) == 9 and [r["offset"] for r in rows if r["_corrupt_record"]] == [320]
    with caplog.at_level(logging.WARNING):
        assert len(read(data, ParseMode.DROPMALFORMED, "crc.bad.xlog")) == 8
    assert any("crc.bad.xlog at byte 320" in rec.getMessage() for rec in caplog.records)
    # With verifyChecksums=false the block is decoded (its damage is in the stored crc only).
    assert len(read(data, ParseMode.FAILFAST, verify=False)) == 9


def test_eof_bad_fixture() -> None:
    data = (READER / "eof.bad.xlog").read_bytes()
    with pytest.raises(CorruptDataError) as info:
        read(data, ParseMode.FAILFAST)
    assert info.value.offset == 208 and "after the EOF marker" in str(info.value)
    rows = read(data, ParseMode.PERMISSIVE)
    # One corrupt row for the bytes after the EOF marker; the blocks there are still read, as xlog.pairs does
    # (it yields 10 rows for this file).
    assert len(good_rows(rows)) == 10 and [r["offset"] for r in rows if r["_corrupt_record"]] == [208]
    assert [r["offset"] for r in rows].index(208) == 6


def test_random_damage_never_escapes_our_errors(small_zstd_xlog: bytes) -> None:
    import random

    rng = random.Random(7)
    data = small_zstd_xlog
    for _ in range(150):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        for verify in (True, False):
            try:
                read(bytes(damaged), ParseMode.FAILFAST, verify=verify)
            except CorruptDataError as exc:
                assert exc.path == "damaged.xlog" and exc.offset is not None
            rows = read(bytes(damaged), ParseMode.PERMISSIVE, verify=verify)
            assert all(r["_corrupt_record"] is None or r["lsn"] is None for r in rows)


def test_header_only_and_empty_files() -> None:
    data = GOOD.read_bytes()
    data_offset = read_meta(io.BytesIO(data), "x").data_offset
    assert read(data[:data_offset], ParseMode.FAILFAST) == []
    assert read(b"", ParseMode.FAILFAST) == []
    assert Path(GOOD).stat().st_size == len(data)
