"""The C kernel of the operations view (``yugabyte/_kernel.c``, driven by ``fast.py``) against its Python reference.

Both twins read the same bytes and must give the same record batches (cut at the same rows), the same
corrupt-record rows, or the same error class with the same text (file and byte offset): on every fixture segment,
on the benchmark's synthesized WAL directory, and on damaged copies, including bodies whose CRCs were recomputed
after the damage, so that the kernel's protobuf decoder (not only the framing) meets them.
"""

from __future__ import annotations

import importlib.util
import random
import struct
import time
from pathlib import Path
from typing import Any

import crc32c
import pytest

import spark_logsource
from spark_logsource.errors import LogSourceError
from spark_logsource.yugabyte.reader import walk_segment
from tests.support.twins import activate, compiled
from tests.yugabyte.conftest import WAL_FIXTURES

pytestmark = pytest.mark.differential

KERNEL = "spark_logsource.yugabyte._kernel"
CLOSED = WAL_FIXTURES / "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959/wal-000000001"
ACTIVE = WAL_FIXTURES / "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959/wal-000000002"
EVENTS = WAL_FIXTURES / "table-0000400000003000800000000000400e/tablet-117b86a0c2d2146a72a920ac45a37935/wal-000000001"
TABLET_DIR = "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959"
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_yugabyte.py"

#: Option sets every comparison runs (the parse modes, superseded entries, small batches).
OPTIONS: list[dict[str, Any]] = [
    {},
    {"mode": "FAILFAST", "tabletId": "5ba68dd7a2803d1dd057e02036f41959,0ef519ec7d021ffe4b8acc079f7fce21"},
    {"includeSuperseded": True, "mode": "PERMISSIVE"},
    {"mode": "DROPMALFORMED", "batchSize": 3},
    {"mode": "PERMISSIVE", "batchSize": 2, "verifyChecksums": False},
]


def _read(twin: str, path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, ...]:
    """What one twin makes of ``path``: ("rows", the rows of each batch) or ("error", class, text)."""
    with monkeypatch.context() as patch:
        activate(twin, patch)
        try:
            batches = list(spark_logsource.iter_batches("yugabyte-wal", str(path), **options))
        except LogSourceError as exc:
            return "error", type(exc), str(exc)
    return "rows", [b.to_pylist() for b in batches]


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, ...]:
    c = _read("c", path, monkeypatch, **options)
    python = _read("python", path, monkeypatch, **options)
    assert c == python, (path, options)
    return c


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_every_fixture_gives_the_same_batches(monkeypatch: pytest.MonkeyPatch, options: dict[str, Any],
                                              reference_batches: list[int]) -> None:
    compiled(KERNEL)
    kind, batches = _same(WAL_FIXTURES, monkeypatch, **options)
    assert kind == "rows" and all(0 < len(b) <= options.get("batchSize", 8192) for b in batches)
    # every undamaged batch of the fixtures (schema changes, transactions, superseded entries) was the kernel's:
    # the one the reference decoded is none (the damaged tablet's bad batch fails its CRC before any decoding)
    assert reference_batches == []


def test_each_fixture_segment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(KERNEL)
    segments = sorted(p for p in WAL_FIXTURES.rglob("wal-*") if not p.name.endswith(".jsonl"))
    assert len(segments) == 8  # as many as the .expected.jsonl files (conftest.expected_segments)
    for segment in segments:
        _same(segment, monkeypatch, includeSuperseded=True, mode="PERMISSIVE")


def test_benchmark_wal_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The segments bench_yugabyte.py synthesizes (fixture copies under many tablet folders), read whole."""
    compiled(KERNEL)
    if not BENCH.is_file():
        pytest.skip("benchmarks/ is not in this copy of the tree (scripts/asan.sh copies the package and the tests)")
    spec = importlib.util.spec_from_file_location("bench_yugabyte", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    ops, files = bench.build(tmp_path / "wal", 300)
    assert ops >= 300 and files > 20
    kind, batches = _same(tmp_path / "wal", monkeypatch, includeSuperseded=True, batchSize=100)
    assert kind == "rows" and sum(map(len, batches)) == ops
    _same(tmp_path / "wal", monkeypatch, batchSize=64)


def _copy(tmp_path: Path, data: bytes, name: str = "wal-000000001") -> Path:
    folder = tmp_path / TABLET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def test_truncations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = CLOSED.read_bytes()
    for cut in range(20, len(data), 23):
        path = _copy(tmp_path, data[:cut])
        for options in ({"mode": "FAILFAST"}, {"mode": "PERMISSIVE", "includeSuperseded": True}):
            _same(path, monkeypatch, **options)


@pytest.mark.parametrize("segment", [CLOSED, EVENTS], ids=["closed", "events"])
def test_flipped_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment: Path) -> None:
    data = segment.read_bytes()
    end = walk_segment(str(segment)).info.read_up_to
    for pos in range(8, end, 17):
        damaged = bytearray(data)
        damaged[pos] ^= 0x5A
        path = _copy(tmp_path, bytes(damaged))
        _same(path, monkeypatch, mode="FAILFAST")
        _same(path, monkeypatch, mode="PERMISSIVE", includeSuperseded=True)


def _rebatch(data: bytes, offset: int, body: bytes) -> bytes:
    """``data`` with the entry batch at ``offset`` replaced by ``body``, its length and both CRCs made good."""
    length = struct.unpack_from("<I", data, offset)[0]
    head = struct.pack("<II", len(body), crc32c.crc32c(body))
    head += struct.pack("<I", crc32c.crc32c(head))
    return data[:offset] + head + body + data[offset + 12 + length:]


def _batches(segment: Path) -> list[tuple[int, bytes]]:
    data = segment.read_bytes()
    return [(off, data[off + 12:off + 12 + struct.unpack_from("<I", data, off)[0]])
            for off, _ in walk_segment(str(segment)).batches]


def _damaged_bodies(body: bytes, rng: random.Random) -> list[bytes]:
    """Bodies whose protobuf is wrong in the ways a decoder must survive (the CRCs are made good afterwards)."""
    out = []
    for _ in range(12):
        at = rng.randrange(len(body))
        out.append(body[:at] + bytes([rng.choice((0x00, 0x7F, 0x80, 0xFF, body[at] ^ 0x01))]) + body[at + 1:])
    at = rng.randrange(len(body))
    out.append(body[:at] + b"\xff" * 9 + b"\x01" + body[at:])  # a 10-byte varint: an absurd length or value
    out.append(body[:at] + b"\xff" * 11 + body[at:])  # a varint longer than 10 bytes
    out.append(body[:at])  # a message cut short
    out.append(body + body[:at])  # trailing bytes that are a piece of a message
    out.append(body[:at] + b"\x0b\x0c" + body[at:])  # a group start / end (wire types 3 and 4)
    return out


@pytest.mark.parametrize("segment", [CLOSED, ACTIVE, EVENTS], ids=["closed", "active", "events"])
def test_damaged_protobuf_with_good_crcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment: Path) -> None:
    """Past the framing: the kernel declines or decodes, the reference decides, and both agree on every row and
    every error. (A closed segment keeps its index blocks and footer after the entries.)"""
    compiled(KERNEL)
    rng = random.Random(20261128)
    data = segment.read_bytes()
    read_up_to = walk_segment(str(segment)).info.read_up_to
    entries, tail = data[:read_up_to], data[read_up_to:]
    outcomes = set()
    for offset, body in _batches(segment):
        for damaged in _damaged_bodies(body, rng):
            path = _copy(tmp_path, _rebatch(entries, offset, damaged) + tail, segment.name)
            outcomes.add(_same(path, monkeypatch, mode="FAILFAST", includeSuperseded=True)[0])
            _same(path, monkeypatch, mode="PERMISSIVE", batchSize=4)
    assert outcomes == {"rows", "error"}


def test_crc32c_matches_the_package() -> None:
    kernel = compiled(KERNEL)
    rng = random.Random(1)
    for n in (0, 1, 7, 8, 9, 63, 64, 1000):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert kernel.crc32c(data) == crc32c.crc32c(data)
    assert kernel.crc32c(b"123456789") == 0xE3069283


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + (payload if wire != 2 else _varint(len(payload)) + payload)


def test_a_message_of_many_fields_in_reverse_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 unknown fields, numbered downwards: the same details on both twins, in bounded time (the kernel
    orders a message's fields by number; many of them must not cost it n squared)."""
    compiled(KERNEL)
    op_id = _field(1, 0, _varint(1)) + _field(2, 0, _varint(1))
    many = b"".join(_field(number, 0, _varint(number)) for number in range(120_000, 100_000, -1))
    replicate = _field(1, 2, op_id) + _field(4, 0, _varint(1)) + many
    body = _field(1, 2, _field(1, 0, _varint(1)) + _field(2, 2, replicate))
    first = walk_segment(str(ACTIVE)).info.first_entry_offset
    data = ACTIVE.read_bytes()[:first]
    head = struct.pack("<II", len(body), crc32c.crc32c(body))
    path = _copy(tmp_path, data + head + struct.pack("<I", crc32c.crc32c(head)) + body, ACTIVE.name)
    start = time.monotonic()
    kind, *outcome = _same(path, monkeypatch, mode="FAILFAST")
    assert kind == "rows", outcome
    (batches,) = outcome
    assert time.monotonic() - start < 60 and kind == "rows"
    (row,) = [r for b in batches for r in b]
    assert row["index"] == 1 and row["op_type"] == "NO_OP"
