"""Damaged copies of the fixture segments: truncations, flipped bytes, absurd lengths, encryption.

Whatever the damage, reading ends in rows, corrupt-record rows or a CorruptDataError naming the file: never
another exception, a hang, or an allocation beyond the file's size.
"""

from __future__ import annotations

import contextlib
import shutil
import struct
import time
from pathlib import Path
from typing import Any

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spark_logsource
from spark_logsource.errors import CorruptDataError, DecodeError
from spark_logsource.yugabyte.catalog import TableSchema
from spark_logsource.yugabyte.docdb import decode_doc_key, decode_value
from spark_logsource.yugabyte.messages import decode_batch
from spark_logsource.yugabyte.reader import walk_segment
from spark_logsource.yugabyte.segment import EncryptedWalError
from tests.yugabyte.conftest import WAL_FIXTURES

CLOSED = WAL_FIXTURES / "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959/wal-000000001"
EVENTS = WAL_FIXTURES / "table-0000400000003000800000000000400e/tablet-117b86a0c2d2146a72a920ac45a37935/wal-000000001"
TABLET_DIR = "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959"


def _copy(tmp_path: Path, data: bytes, name: str = "wal-000000001") -> Path:
    folder = tmp_path / TABLET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def _read(path: Path, **options: Any) -> list[dict[str, Any]]:
    start = time.monotonic()
    rows = spark_logsource.read("yugabyte-wal", str(path), includeSuperseded=True, **options).to_pylist()
    assert time.monotonic() - start < 10, "reading a damaged 3 KB segment must not take long"
    return rows


def _batch_offsets(path: Path) -> list[int]:
    return [off for off, _ in walk_segment(str(path)).batches]


def test_truncation_at_every_entry_boundary_reads_the_entries_before_it(tmp_path: Path) -> None:
    data = CLOSED.read_bytes()
    offsets = _batch_offsets(CLOSED)
    ends = [*offsets[1:], walk_segment(str(CLOSED)).info.read_up_to]
    full = walk_segment(str(CLOSED))
    entries_before = {}
    total = 0
    for off, batch in full.batches:
        entries_before[off] = total
        total += len(batch.entries)
    entries_before[ends[-1]] = total
    for cut in [offsets[0], *ends]:
        path = _copy(tmp_path, data[:cut])
        rows = _read(path, mode="FAILFAST")
        assert len(rows) == entries_before[cut], cut


def test_truncation_inside_every_entry_is_a_torn_tail_not_an_error(tmp_path: Path) -> None:
    data = CLOSED.read_bytes()
    offsets = _batch_offsets(CLOSED)
    ends = [*offsets[1:], walk_segment(str(CLOSED)).info.read_up_to]
    for start, end in zip(offsets, ends, strict=True):
        for cut in sorted({start + 1, start + 11, start + 12, start + 13, (start + end) // 2, end - 1}):
            path = _copy(tmp_path, data[:cut])
            walk = walk_segment(str(path))
            assert walk.end_status == "torn_tail" and walk.end_offset == start, cut
            assert not walk.bad
            rows = _read(path, mode="FAILFAST")
            assert all(r["offset"] < start for r in rows)


def test_zero_filled_tail_after_a_cut_is_tolerated(tmp_path: Path) -> None:
    data = CLOSED.read_bytes()
    offsets = _batch_offsets(CLOSED)
    path = _copy(tmp_path, data[:offsets[3]] + bytes(70_000))
    walk = walk_segment(str(path))
    assert walk.end_status == "zero_tail" and walk.end_offset == offsets[3]


@pytest.mark.parametrize("verify", [True, False], ids=["crc", "no-crc"])
def test_every_flipped_byte_gives_rows_or_a_named_error(tmp_path: Path, verify: bool) -> None:
    data = EVENTS.read_bytes()
    for pos in range(len(data)):
        damaged = bytearray(data)
        damaged[pos] ^= 0x5A
        path = _copy(tmp_path, bytes(damaged))
        for mode in ("PERMISSIVE", "FAILFAST"):
            try:
                rows = _read(path, mode=mode, verifyChecksums=verify)
            except CorruptDataError as exc:
                assert mode == "FAILFAST", (pos, exc)
                assert exc.path == str(path)
                continue
            if mode == "PERMISSIVE":
                assert all(r["file"] == str(path) for r in rows)
        rows = _read(path, mode="DROPMALFORMED", view="writes", verifyChecksums=verify)
        assert all(r["raw_key"] is not None for r in rows)


def test_flipped_body_byte_is_a_checksum_error_at_its_batch(tmp_path: Path) -> None:
    data = bytearray(CLOSED.read_bytes())
    offsets = _batch_offsets(CLOSED)
    data[offsets[4] + 20] ^= 1
    path = _copy(tmp_path, bytes(data))
    with pytest.raises(CorruptDataError, match="checksum") as info:
        _read(path, mode="FAILFAST")
    assert info.value.offset == offsets[4]
    rows = _read(path)
    bad = [r for r in rows if r["_corrupt_record"]]
    assert [r["offset"] for r in bad] == [offsets[4]]
    # the footer no longer matches what could be read, but the bad batch is the one error reported
    assert len(rows) == 14 - 1 + 1


def _with_entry_length(data: bytes, offset: int, length: int) -> bytes:
    head = struct.pack("<II", length, 0)
    head += struct.pack("<I", crc32c.crc32c(head))
    return data[:offset] + head + data[offset + 12:]


@pytest.mark.parametrize("length", [0, 0x7FFFFFFF, 0xFFFFFFFF])
def test_absurd_entry_length_with_a_valid_header_crc(tmp_path: Path, length: int) -> None:
    data = CLOSED.read_bytes()
    offsets = _batch_offsets(CLOSED)
    path = _copy(tmp_path, _with_entry_length(data, offsets[2], length))
    with pytest.raises(CorruptDataError) as info:
        _read(path, mode="FAILFAST")
    assert info.value.offset == offsets[2]


def test_absurd_header_and_footer_lengths(tmp_path: Path) -> None:
    data = CLOSED.read_bytes()
    path = _copy(tmp_path, data[:8] + struct.pack("<I", 0xFFFFFFF0) + data[12:])
    with pytest.raises(CorruptDataError, match="header length"):
        _read(path, mode="FAILFAST")
    rows = _read(path)
    assert len(rows) == 1 and rows[0]["_corrupt_record"] and rows[0]["offset"] == 8
    path = _copy(tmp_path, data[:-4] + struct.pack("<I", 0x7FFFFFFF))
    with pytest.raises(CorruptDataError, match="footer length"):
        _read(path, mode="FAILFAST")


def test_footer_entry_count_is_checked(tmp_path: Path) -> None:
    data = CLOSED.read_bytes()
    footer_len = struct.unpack("<I", data[-4:])[0]
    footer_at = len(data) - 12 - footer_len
    footer = bytearray(data[footer_at:-12])
    assert footer[0] == 0x08  # field 1 (num_entries), varint
    footer[1] = 13
    path = _copy(tmp_path, data[:footer_at] + bytes(footer) + data[-12:])
    with pytest.raises(CorruptDataError, match="footer says 13 entries") as info:
        _read(path, mode="FAILFAST")
    assert info.value.offset == footer_at


def test_encrypted_segment_is_a_clear_error_in_every_mode(tmp_path: Path) -> None:
    path = _copy(tmp_path, b"encrypt!" + struct.pack(">I", 0x128) + bytes(300))
    for mode in ("PERMISSIVE", "DROPMALFORMED", "FAILFAST"):
        with pytest.raises(EncryptedWalError, match="encrypted"):
            _read(path, mode=mode)


def test_not_a_segment_and_all_zero_files(tmp_path: Path) -> None:
    path = _copy(tmp_path, b"kudulogf" + bytes(100))
    with pytest.raises(CorruptDataError, match="not a YugabyteDB WAL segment"):
        _read(path, mode="FAILFAST")
    zero = _copy(tmp_path, bytes(65536), "wal-000000002")
    assert walk_segment(str(zero)).info.kind == "uninitialized"
    assert _read(zero, mode="FAILFAST") == []
    shutil.rmtree(tmp_path / TABLET_DIR)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_batch_bodies_raise_only_decode_errors(body: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_batch(body)


_SCHEMA = TableSchema({"columns": [
    {"id": 0, "name": "k", "type": {"main": "STRING"}, "is_key": True, "is_hash_key": True, "pg_type_oid": 25},
    {"id": 1, "name": "a", "type": {"main": "INT32"}, "pg_type_oid": 23},
    {"id": 2, "name": "b", "type": {"main": "STRING"}, "is_nullable": True, "pg_type_oid": 25},
]}, 0)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_random_keys_and_values_raise_only_decode_errors(raw: bytes) -> None:
    for prefix in (b"", b"G\x00\x01", b"z\x00"):
        with contextlib.suppress(DecodeError):
            decode_doc_key(prefix + raw)
        with contextlib.suppress(DecodeError):
            decode_value(prefix + raw, None, lambda v: _SCHEMA if v == 0 else None)
