"""Damaged copies of real binlogs: truncations, flipped bytes, absurd sizes, garbage, decompression bombs.

Checked: no hang (each read runs under an alarm), FAILFAST raises our error class naming the file and the offset
of the damaged event, PERMISSIVE keeps every undamaged event exactly and adds corrupt rows at the damage."""

from __future__ import annotations

import os
import random
import signal
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zstandard

from spark_logsource.errors import (
    ChecksumError,
    CorruptDataError,
    EncryptedBinlogError,
    TruncatedDataError,
)
from spark_logsource.mysql.binlog.compression import mariadb_uncompress, zstd_uncompress
from spark_logsource.options import ParseMode
from tests.support.mysql_events import FIXTURE_DIR, read_table

CRC_FILE = FIXTURE_DIR / "osheroff/mysql-bin.checksum-crc32"
MARIA_FILE = FIXTURE_DIR / "mariadb-poc/domain_id_1_mariadb-repl-bin.000002"
NOCRC_FILE = FIXTURE_DIR / "osheroff/mysql-bin.checksum-none"
PAYLOAD_FILE = FIXTURE_DIR / "osheroff/mysql-bin.compressed"


@contextmanager
def deadline(seconds: int = 30) -> Iterator[None]:
    def fail(*_: object) -> None:
        raise TimeoutError(f"read took over {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _events(path: Path, data: bytes | None = None, **kw: object) -> list[dict]:
    with deadline():
        return read_table(path, source=data, **kw).to_pylist()


def _good(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_corrupt_record"] is None]


def _bad(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_corrupt_record"] is not None]


def _strip(rows: list[dict]) -> list[tuple]:
    return [(r["pos"], r["next_pos"], r["event_type"], r["data"]) for r in rows]


@pytest.mark.parametrize("path", [CRC_FILE, MARIA_FILE, NOCRC_FILE], ids=lambda p: p.name)
def test_truncated_at_many_offsets(path: Path) -> None:
    data = path.read_bytes()
    whole = _events(path)
    fde_end = whole[0]["next_pos"]
    for cut in range(fde_end + 1, len(data), max(1, len(data) // 60)):
        rows = _events(path, data[:cut])
        kept = [r for r in whole if r["next_pos"] <= cut]
        assert _strip(_good(rows)) == _strip(kept)
        boundary = any(r["next_pos"] == cut for r in whole)
        cut_event = next(r for r in whole if r["pos"] <= cut < r["next_pos"]) if not boundary else None
        if cut_event is None:
            assert _bad(rows) == []
            continue
        assert [r["pos"] for r in _bad(rows)] == [cut_event["pos"]]
        with pytest.raises(TruncatedDataError) as info, deadline():
            list(read_table(path, source=data[:cut], mode=ParseMode.FAILFAST).to_pylist())
        assert info.value.offset == cut_event["pos"] and info.value.path == str(path)


@pytest.mark.parametrize("path", [CRC_FILE, MARIA_FILE], ids=lambda p: p.name)
def test_flipped_bytes_fail_the_crc_of_their_event_only(path: Path) -> None:
    data = path.read_bytes()
    whole = _events(path)
    rng = random.Random(7)
    for _ in range(40):
        at = rng.randrange(whole[0]["next_pos"], len(data))
        damaged = bytearray(data)
        damaged[at] ^= 1 << rng.randrange(8)
        rows = _events(path, bytes(damaged))
        hit = next(r for r in whole if r["pos"] <= at < r["next_pos"])
        bad = _bad(rows)
        assert bad and bad[0]["pos"] == hit["pos"]
        # every event outside the damaged one survives (a damaged size field may hide a few next ones in a
        # resync, never a later one past the next valid header)
        survivors = {(r["pos"], r["event_type"]) for r in _good(rows)}
        after = [r for r in whole if r["pos"] >= bad[-1]["next_pos"]]
        before = [r for r in whole if r["next_pos"] <= hit["pos"]]
        assert all((r["pos"], r["event_type"]) in survivors for r in before + after)
        assert len(_good(rows)) == len(whole) - 1 - len([r for r in whole if hit["next_pos"] <= r["pos"]
                                                         < bad[-1]["next_pos"]])
        with pytest.raises(CorruptDataError) as info, deadline():
            read_table(path, source=bytes(damaged), mode=ParseMode.FAILFAST)
        assert info.value.offset == hit["pos"]


def test_bad_crc_trailer_is_a_checksum_error_and_can_be_ignored() -> None:
    data = bytearray(CRC_FILE.read_bytes())
    whole = _events(CRC_FILE)
    victim = whole[5]
    data[victim["next_pos"] - 1] ^= 0xFF
    with pytest.raises(ChecksumError) as info, deadline():
        read_table(CRC_FILE, source=bytes(data), mode=ParseMode.FAILFAST)
    assert info.value.offset == victim["pos"]
    assert _strip(_events(CRC_FILE, bytes(data), verify_checksums=False)) == _strip(whole)


@pytest.mark.parametrize("path", [CRC_FILE, NOCRC_FILE], ids=lambda p: p.name)
def test_absurd_event_size(path: Path) -> None:
    data = bytearray(path.read_bytes())
    whole = _events(path)
    victim = whole[len(whole) // 2]
    data[victim["pos"] + 9:victim["pos"] + 13] = (0xFFFFFFF0).to_bytes(4, "little")
    rows = _events(path, bytes(data))
    assert [r["pos"] for r in _bad(rows)] == [victim["pos"]]
    assert _strip(_good(rows)) == _strip([r for r in whole if r["pos"] != victim["pos"]])
    with pytest.raises(CorruptDataError) as info, deadline():
        read_table(path, source=bytes(data), mode=ParseMode.FAILFAST)
    assert info.value.offset == victim["pos"] and "size" in info.value.reason
    dropped = _events(path, bytes(data), mode=ParseMode.DROPMALFORMED)
    assert _strip(dropped) == _strip(_good(rows))


@pytest.mark.parametrize("path", [CRC_FILE, NOCRC_FILE], ids=lambda p: p.name)
def test_garbage_over_events_is_one_corrupt_row(path: Path) -> None:
    data = path.read_bytes()
    whole = _events(path)
    at = whole[len(whole) // 3]["pos"] + 7
    garbage = random.Random(3).randbytes(5000)
    rows = _events(path, data[:at] + garbage + data[at + len(garbage):])
    hit = next(r for r in whole if r["pos"] <= at < r["next_pos"])
    resume = next(r["pos"] for r in whole if r["pos"] >= at + len(garbage))
    assert [(r["pos"], r["next_pos"]) for r in _bad(rows)] == [(hit["pos"], resume)]
    expected = [r for r in whole if r["next_pos"] <= hit["pos"] or r["pos"] >= resume]
    assert _strip(_good(rows)) == _strip(expected)


def test_garbage_file_and_empty_file() -> None:
    for data in (os.urandom(10_000), b"", b"\xfebin", b"\xfebin" + os.urandom(300)):
        with pytest.raises(CorruptDataError) as info, deadline():
            read_table("garbage.bin", source=data, mode=ParseMode.FAILFAST)
        assert info.value.path == "garbage.bin" and info.value.offset in (0, 4)
        rows = _events(Path("garbage.bin"), data)
        assert len(rows) == 1 and rows[0]["_corrupt_record"]


def _with_crc(event: bytearray) -> bytes:
    event[-4:] = zlib.crc32(bytes(event[:-4])).to_bytes(4, "little")
    return bytes(event)


def test_zstd_bomb_in_transaction_payload() -> None:
    data = PAYLOAD_FILE.read_bytes()
    whole = _events(PAYLOAD_FILE)
    payload = next(r for r in whole if r["event_type"] == "TRANSACTION_PAYLOAD")
    bomb = zstandard.ZstdCompressor(level=1).compress(bytes(64 << 20))
    tlv = bytes([1, 4, 253]) + len(bomb).to_bytes(3, "little") + bytes([2, 1, 0]) + bytes([3, 9, 254]) + \
        (64 << 20).to_bytes(8, "little") + b"\0"
    event = bytearray(data[payload["pos"]:payload["pos"] + 19]) + tlv + bomb + b"\0\0\0\0"
    size = len(event)
    event[9:13] = size.to_bytes(4, "little")
    event[13:17] = (payload["pos"] + size).to_bytes(4, "little")
    damaged = data[:payload["pos"]] + _with_crc(event)
    with pytest.raises(CorruptDataError) as info, deadline():
        read_table(PAYLOAD_FILE, source=damaged, mode=ParseMode.FAILFAST, max_uncompressed=1 << 20)
    assert info.value.offset is not None and info.value.offset >= payload["pos"]
    assert "cap" in info.value.reason or "beyond" in info.value.reason
    rows = _events(PAYLOAD_FILE, damaged, max_uncompressed=1 << 20)
    assert [r["pos"] for r in _bad(rows)] == [payload["pos"]]
    with pytest.raises(CorruptDataError):
        zstd_uncompress(bomb, "x", 0, 1 << 20)


def test_zlib_bomb_and_lying_lengths() -> None:
    stream = zlib.compress(bytes(32 << 20))
    with deadline(), pytest.raises(CorruptDataError) as info:  # declares 1 KiB, inflates to 32 MiB
        mariadb_uncompress(bytes([0x82]) + (1024).to_bytes(2, "big") + stream, "f", 100)
    assert info.value.offset == 100
    with pytest.raises(CorruptDataError):  # declares more than the cap
        mariadb_uncompress(bytes([0x84]) + (1 << 31).to_bytes(4, "big") + stream, "f", 0, max_size=1 << 20)
    with pytest.raises(CorruptDataError):  # truncated stream
        mariadb_uncompress(bytes([0x81, 100]) + zlib.compress(bytes(100))[:-6], "f", 0)
    assert mariadb_uncompress(bytes([0x81, 100]) + zlib.compress(bytes(100)), "f", 0) == bytes(100)


def test_start_encryption_event_is_an_encrypted_binlog_error() -> None:
    data = MARIA_FILE.read_bytes()
    whole = _events(MARIA_FILE)
    victim = next(r for r in whole if r["event_type"] == "MARIA_BINLOG_CHECKPOINT")
    event = bytearray(data[victim["pos"]:victim["next_pos"]])
    event[4] = 164
    damaged = data[:victim["pos"]] + _with_crc(event) + data[victim["next_pos"]:]
    with pytest.raises(EncryptedBinlogError) as info, deadline():
        read_table(MARIA_FILE, source=damaged, mode=ParseMode.FAILFAST)
    assert info.value.offset == victim["pos"] and "encrypted binlog" in str(info.value)
    rows = _events(MARIA_FILE, damaged)
    assert _strip(_good(rows)) == _strip([r for r in whole if r["pos"] < victim["pos"]])
    assert len(_bad(rows)) == 1


def test_truncated_gzip_keeps_the_events_before_the_cut(tmp_path: Path) -> None:
    gz = FIXTURE_DIR / "osheroff/mysql-bin.sakila.gz"
    whole = _events(gz)
    cut = gz.read_bytes()[: gz.stat().st_size // 2]
    rows = _events(gz, cut)
    good = _good(rows)
    assert 0 < len(good) < len(whole) and _strip(good) == _strip(whole[: len(good)])
    assert len(_bad(rows)) == 1


def test_an_xid_past_the_int64_column_is_a_corrupt_record_not_a_crash(tmp_path: Path, twin: str) -> None:
    """A byte of a zstd-compressed TRANSACTION_PAYLOAD changed (found by a sweep of damaged fixtures): the payload
    still inflates, but its XID event now holds 18174840346171736086, past the ``xid`` column's int64. That was an
    OverflowError from pyarrow; it is now an error naming the file and the event, or one corrupt row in PERMISSIVE
    with the transaction's rows kept."""
    import spark_logsource

    source = FIXTURE_DIR / "apecloud/mysql-bin.000057"
    damaged = bytearray(source.read_bytes())
    damaged[1075] = 0
    path = tmp_path / "mysql-bin.000057"
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptDataError, match=r"at byte 749: xid 18174840346171736086 is past the xid column") as info:
        spark_logsource.read("mysql-binlog", str(path), verifyChecksums="false", mode="FAILFAST")
    assert str(path) in str(info.value)
    rows = spark_logsource.read("mysql-binlog", str(path), verifyChecksums="false", mode="PERMISSIVE").to_pylist()
    want = spark_logsource.read("mysql-binlog", str(source)).to_pylist()
    assert len(_bad(rows)) == 1 and "xid" in _bad(rows)[0]["_corrupt_record"]
    kept = [(r["pos"], r["op"], r["after"]) for r in _good(rows)]
    assert kept == [(r["pos"], r["op"], r["after"]) for r in want]
    assert [r["xid"] for r in _good(rows)] == [want[0]["xid"], None, None]
