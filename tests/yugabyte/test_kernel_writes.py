"""The C kernel of the writes view (``yugabyte/_kernel_writes.c`` with ``_kernel_tables.c``, driven by ``fast.py``)
against its Python reference (``docdb.py`` and ``reader.py``'s writes columns).

Both twins read the same bytes and must give the same record batches, corrupt-record rows or errors: on every
fixture segment, on the benchmark's synthesized WAL directory, on damaged copies (bodies whose CRCs were recomputed
after the damage, so that the kernel's decoders meet them), and on write batches built here with every DocDB key
component and value type the reference knows, good and bad, so that the kernel's DocDB decoder and Variant encoder
meet each of them (and a sweep of damaged pairs).
"""

from __future__ import annotations

import importlib.util
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from spark_logsource.yugabyte import reader as reader_module
from spark_logsource.yugabyte.messages import has_schema_change
from spark_logsource.yugabyte.reader import walk_segment
from tests.support.twins import compiled
from tests.yugabyte.conftest import WAL_FIXTURES
from tests.yugabyte.test_kernel import (
    ACTIVE,
    BENCH,
    CLOSED,
    EVENTS,
    KERNEL,
    OPTIONS,
    _batches,
    _copy,
    _damaged_bodies,
    _field,
    _rebatch,
    _varint,
)
from tests.yugabyte.test_kernel import _same as same_operations

pytestmark = pytest.mark.differential


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, ...]:
    return same_operations(path, monkeypatch, **{"view": "writes", **options})


def _schema_change_batches() -> list[int]:
    out = []
    for segment in sorted(p for p in WAL_FIXTURES.rglob("wal-*") if not p.name.endswith(".jsonl")):
        out += [offset for offset, body in _batches(segment) if has_schema_change(body)]
    return out


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_every_fixture_gives_the_same_batches(monkeypatch: pytest.MonkeyPatch, options: dict[str, Any],
                                              reference_batches: list[int]) -> None:
    compiled(KERNEL)
    kind, batches = _same(WAL_FIXTURES, monkeypatch, **options)
    assert kind == "rows" and all(0 < len(b) <= options.get("batchSize", 8192) for b in batches)
    rows = [r for b in batches for r in b]
    assert {r["kind"] for r in rows} >= {"insert_packed", "update_column", "delete_row"}
    # the kernel took every batch but those with a schema change (which the reader's catalog must learn first)
    assert sorted(reference_batches) == sorted(_schema_change_batches()) == [294, 2074]


def test_each_fixture_segment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(KERNEL)
    segments = sorted(p for p in WAL_FIXTURES.rglob("wal-*") if not p.name.endswith(".jsonl"))
    assert len(segments) == 8
    for segment in segments:
        _same(segment, monkeypatch, includeSuperseded=True, mode="PERMISSIVE")


def test_index_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries outside a requested index range keep no rows but still take their place in the queue."""
    compiled(KERNEL)
    kind, batches = _same(WAL_FIXTURES, monkeypatch, includeSuperseded=True)
    every = [r for b in batches for r in b]
    for bounds in ({"fromIndex": 5}, {"toIndex": 4}, {"fromIndex": 3, "toIndex": 9}):
        kind, batches = _same(WAL_FIXTURES, monkeypatch, includeSuperseded=True, **bounds)
        assert kind == "rows" and 0 < sum(map(len, batches)) < len(every)


def test_benchmark_wal_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(KERNEL)
    if not BENCH.is_file():
        pytest.skip("benchmarks/ is not in this copy of the tree (scripts/asan.sh copies the package and the tests)")
    spec = importlib.util.spec_from_file_location("bench_yugabyte", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    ops, _ = bench.build(tmp_path / "wal", 300)
    segments = bench.template()
    per_copy = sum(len(b.entries) for *_, data in segments for b in bench._batches(data))
    pairs = sum(len(e.pairs) for *_, data in segments for b in bench._batches(data) for e in b.entries)
    kind, batches = _same(tmp_path / "wal", monkeypatch, includeSuperseded=True, batchSize=100)
    assert kind == "rows" and pairs > 0 and sum(map(len, batches)) == ops // per_copy * pairs
    _same(tmp_path / "wal", monkeypatch, batchSize=64)


def test_truncations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(KERNEL)
    data = CLOSED.read_bytes()
    for cut in range(20, len(data), 29):
        path = _copy(tmp_path, data[:cut])
        for options in ({"mode": "FAILFAST"}, {"mode": "PERMISSIVE", "includeSuperseded": True}):
            _same(path, monkeypatch, **options)


@pytest.mark.parametrize("segment", [CLOSED, EVENTS], ids=["closed", "events"])
def test_flipped_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment: Path) -> None:
    compiled(KERNEL)
    data = segment.read_bytes()
    end = walk_segment(str(segment)).info.read_up_to
    for pos in range(8, end, 19):
        damaged = bytearray(data)
        damaged[pos] ^= 0x5A
        path = _copy(tmp_path, bytes(damaged))
        _same(path, monkeypatch, mode="FAILFAST")
        _same(path, monkeypatch, mode="PERMISSIVE", includeSuperseded=True)


@pytest.mark.parametrize("segment", [CLOSED, ACTIVE, EVENTS], ids=["closed", "active", "events"])
def test_damaged_protobuf_with_good_crcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment: Path) -> None:
    compiled(KERNEL)
    rng = random.Random(20261129)
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


# ---- write batches built here: every key component and value type ---------------------------------------------

#: The doc key of a row of ACTIVE's table (hash, region, order_id): its schema is version 1 in the header.
ROW = b"Gp\xdaSeu-west\x00\x00!I\x80\x00\x00\x00\x00\x00\x03\xec!"
PACKED = (b"z\x01\x06\x00\x00\x00\x0c\x00\x00\x00\x15\x00\x00\x00\"\x00\x00\x00SwayneH\x00\x00\x00\x04FD@.\x00\x00\x00"
          b"\x00\x00\x00Safter rename")
NAN32 = struct.pack(">f", float("nan"))

#: Range components after the hash part (each ended by the group end where needed).
COMPONENTS = [
    b"Sa\x00\x01b\x00\x00", b"a" + bytes(x ^ 0xFF for x in b"desc") + b"\xff\xff", b"S\xff\xfe\x00\x00",
    b"H\x80\x00\x00\x07", b"e\x7f\xff\xff\xf8", b"I\x7f\xff\xff\xff\xff\xff\xff\xfe",
    b"b\x00\x00\x00\x00\x00\x00\x00\x01",
    b"s\x80\x05\xf8\x9b\x9f\x1e\x40\x00", b"c\x7f\xfa\x07\x64\x60\xe1\xbf\xff", b"s\xff\xff\xff\xff\xff\xff\xff\xff",
    b"O\x00\x00\x01\x00", b"g\xff\xff\xfe\xff", b"U\xff\xff\xff\xff\xff\xff\xff\xff",
    b"j\x00\x00\x00\x00\x00\x00\x00\x00",
    b"D\xc0\x09\x21\xfb\x54\x44\x2d\x18", b"L\x3f\xf6\xde\x04\xab\xbb\xd2\xe7", b"C\xbf\xc0\x00\x00",
    b"M\x40\x3f\xff\xff",
    b"C\xff\xc0\x00\x00", b"D\x7f\xf0\x00\x00\x00\x00\x00\x01", b"T", b"h", b"F", b"i", b"$", b"|",
    b"Z", b"S\x00", b"H\x80", b"",
]

#: Values, each put under a column of the row (K\x83 qty, K\x86 remark, K\x99 unknown), under the row itself
#: and under its liveness column.
VALUES = [
    b"H\x00\x00\x00\x05", b"H\xff\xff\xff\xfb", b"I\x80\x00\x00\x00\x00\x00\x00\x00", b"O\xff\xff\xff\xff",
    b"U\xff\xff\xff\xff\xff\xff\xff\xff", b"C\x3f\xc0\x00\x00", b"C" + NAN32, b"D\x7f\xf8\x00\x00\x00\x00\x00\x01",
    b"s\x00\x05\xf8\x9b\x9f\x1e\x40\x00", b"s\x7f\xff\xff\xff\xff\xff\xff\xff", b"T", b"F", b"T\x00", b"$", b"X",
    b"2" + b"\x00" * 8 + b"\x01jsonb", b"2\x00", b"_" + bytes(range(16)), b"_\x01", b"Splain text", b"S\xff\xfe",
    b"\\coll", b"S", b"k\x81t\x85H\x00\x00\x00\x01", b"u" + bytes(8) + b"Sstamped", b"u\x00", b"t\xff", b"",
    PACKED, PACKED[:-3], b"z\x00\x06\x00\x00\x00", b"z\x05", b"|\x01", b"H\x00\x00\x01", b"?", b"S" + "é".encode(),
    b"S" + b"x" * 70,
]


def _write_batch(pairs: list[tuple[bytes, bytes]], index: int, transaction: bytes | None = None) -> bytes:
    """A LogEntryBatchPB of one WRITE_OP holding ``pairs`` (field numbers: docs/formats/yugabyte-wal.md)."""
    write_batch = b"".join(_field(1, 2, _field(1, 2, k) + _field(2, 2, v)) for k, v in pairs)
    if transaction is not None:
        write_batch += _field(2, 2, _field(1, 2, transaction))
    replicate = (_field(1, 2, _field(1, 0, _varint(2)) + _field(2, 0, _varint(index)))
                 + _field(2, 1, struct.pack("<Q", (1_700_000_000_000_000 << 12) + index)) + _field(4, 0, _varint(3))
                 + _field(5, 2, _field(7, 2, write_batch)))
    return _field(1, 2, _field(1, 0, _varint(1)) + _field(2, 2, replicate)) + _field(2, 2, _field(1, 0, _varint(2))
                                                                                   + _field(2, 0, _varint(index)))


def _segment(tmp_path: Path, bodies: list[bytes]) -> Path:
    first = walk_segment(str(ACTIVE)).info.first_entry_offset
    out = ACTIVE.read_bytes()[:first]
    for body in bodies:
        head = struct.pack("<II", len(body), _crc(body))
        out += head + struct.pack("<I", _crc(head)) + body
    return _copy(tmp_path, out, ACTIVE.name)


def _crc(data: bytes) -> int:
    import crc32c

    return int(crc32c.crc32c(data))


def _pair_sets() -> list[list[tuple[bytes, bytes]]]:
    sets: list[list[tuple[bytes, bytes]]] = []
    for comp in COMPONENTS:
        key = b"G\x12\x34" + comp + b"!!"
        sets.append([(key, b"$"), (key + b"K\x83", b"H\x00\x00\x00\x01")])
        sets.append([(b"0\x00\x00\x40\x01" + comp + b"!", PACKED)])
    sets.append([(b"y" + bytes(range(16)) + b"Sx\x00\x00!", b"X")])
    sets.append([(b"0\x00\x01", b"X")])
    for value in VALUES:
        for sub in (b"K\x83", b"K\x86", b"K\x99", b"", b"J\x80", b"J\x81", b"\x7f\x01", b"K\xf8\x00\x00\x00\x00\x01",
                    b"K\xfb\xff\xff\xff\xff"):  # (the last: a column id beyond int32)
            sets.append([(ROW + sub, value)])
    # a row inserted column by column (its liveness column after its columns), and one updated
    sets.append([(ROW + b"K\x83", b"H\x00\x00\x00\x02"), (ROW + b"K\x86", b"Snew"), (ROW + b"J\x80", b"$"),
                 (ROW[:-2] + b"\x01!" + b"K\x83", b"X")])
    return sets


def test_every_key_component_and_value_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            reference_batches: list[int]) -> None:
    compiled(KERNEL)
    sets = _pair_sets()
    bodies = [_write_batch(pairs, index, bytes(range(16)) if index % 3 == 0 else None)
              for index, pairs in enumerate(sets, start=20)]
    path = _segment(tmp_path, bodies)
    kind, batches = _same(path, monkeypatch, mode="FAILFAST", includeSuperseded=True)
    assert kind == "rows"
    rows = [r for b in batches for r in b]
    assert len(rows) == sum(map(len, sets))
    errors = sum(r["decode_error"] is not None for r in rows)
    # both sides of the declining rule are met: most batches the kernel's, the undecodable pairs the reference's
    assert errors > 0 and 0 < len(reference_batches) < len(bodies) // 2
    kinds = {r["kind"] for r in rows}
    assert kinds >= {"insert_packed", "liveness", "insert_column", "update_column", "set_null", "delete_row", "row",
                     "other"}
    _same(path, monkeypatch, mode="PERMISSIVE", batchSize=7)


def test_damaged_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and values with bytes flipped, cut or grown (the protobuf around them stays good)."""
    compiled(KERNEL)
    rng = random.Random(26)
    sets = _pair_sets()
    bodies = []
    for index in range(400):
        pairs = []
        for key, value in rng.choice(sets):
            key, value = bytearray(key), bytearray(value)
            for _ in range(rng.randrange(1, 3)):
                target = key if rng.random() < 0.5 or not value else value
                if not target:
                    continue
                at = rng.randrange(len(target))
                action = rng.randrange(3)
                if action == 0:
                    target[at] = rng.choice((0x00, 0x21, 0x7F, 0x80, 0xFF, target[at] ^ 0x10))
                elif action == 1:
                    del target[at:]
                else:
                    target[at:at] = bytes([rng.randrange(256)])
            pairs.append((bytes(key), bytes(value)))
        bodies.append(_write_batch(pairs, 100 + index))
    path = _segment(tmp_path, bodies)
    kind, batches = _same(path, monkeypatch, mode="FAILFAST", includeSuperseded=True)
    assert kind == "rows" and sum(map(len, batches)) > 400
    _same(path, monkeypatch, mode="PERMISSIVE", batchSize=5)


def test_many_pairs_in_one_operation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     reference_batches: list[int]) -> None:
    """A write of 20,000 pairs (a bulk insert column by column): liveness is looked up, not scanned per pair."""
    compiled(KERNEL)
    pairs = []
    for i in range(5000):
        row = b"G\x00\x01S" + str(i).encode() + b"\x00\x00!I\x80\x00\x00\x00\x00\x00\x00\x01!"
        pairs += [(row + b"J\x80", b"$"), (row + b"K\x83", b"H\x00\x00\x00\x01"), (row + b"K\x86", b"Sx"),
                  (row[:-2] + b"\x02!K\x83", b"H\x00\x00\x00\x02")]
    path = _segment(tmp_path, [_write_batch(pairs, 30)])
    kind, batches = _same(path, monkeypatch, mode="FAILFAST", batchSize=3000)
    assert kind == "rows" and sum(map(len, batches)) == 20_000 and reference_batches == []
    kinds = [r["kind"] for b in batches for r in b]
    assert kinds.count("insert_column") == 10_000 and kinds.count("update_column") == 5000


@pytest.mark.parametrize("max_pending", [0, 1, 2, 5])
def test_a_short_queue(monkeypatch: pytest.MonkeyPatch, max_pending: int) -> None:
    """With few entries held, rows are released before a later entry can supersede them: the queue counts entries
    (an entry of many pairs, or of none, is one), as the reference's does."""
    compiled(KERNEL)
    monkeypatch.setattr(reader_module, "MAX_PENDING", max_pending)
    kind, short = _same(WAL_FIXTURES, monkeypatch)
    monkeypatch.setattr(reader_module, "MAX_PENDING", 100_000)
    kind_long, long = _same(WAL_FIXTURES, monkeypatch)
    assert kind == kind_long == "rows"
    flagged = sum(r["superseded"] is True for b in short for r in b)
    if max_pending <= 1:  # released before the entry that supersedes them is read: kept, not flagged
        assert sum(map(len, short)) > sum(map(len, long)) and flagged == 0
