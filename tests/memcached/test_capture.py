"""Captured TAP streams (what two real servers sent) read as rows; damaged captures give errors or corrupt rows."""

from __future__ import annotations

import hashlib
import io
import random
import time
from pathlib import Path

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.errors import CorruptDataError, TruncatedDataError
from spark_logsource.memcached.capture import iter_capture_batches
from spark_logsource.memcached.protocol import frame
from spark_logsource.memcached.tap import BatchSpec, decode_packet, rows_to_batch, tap_schema
from spark_logsource.options import ParseMode
from tests.memcached.helpers import apply_rows, expected_items, item_value, workload_expiry
from tests.memcached.replay import load_recording, recording_names

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "memcached-tap"
CAPTURES = sorted(FIXTURES.glob("*.tap"))


def read_bytes(data: bytes, mode: ParseMode = ParseMode.PERMISSIVE, chunk: int = 1 << 20,
               max_body: int = 32 << 20) -> pa.Table:
    spec = BatchSpec("mem.tap", tap_schema("_corrupt_record" if mode is ParseMode.PERMISSIVE else None), 4, mode)
    batches = list(iter_capture_batches(io.BytesIO(data), "mem.tap", len(data), spec, max_body, chunk=chunk))
    return pa.Table.from_batches(batches, schema=spec.schema)


def reference_rows(data: bytes) -> list[dict]:
    starts, end, problem = frame(data, 0, len(data), 32 << 20)
    assert problem is None and end == len(data)
    bounds = [*starts, end]
    return [decode_packet(data[bounds[i]:bounds[i + 1]]) | {"offset": bounds[i]} for i in range(len(starts))]


@pytest.mark.parametrize("path", [p for p in CAPTURES if "takeover" not in p.name or "couchbase" in p.name],
                         ids=lambda p: p.name)
def test_every_capture_decodes_completely_like_the_reference(path: Path) -> None:
    data = path.read_bytes()
    table = spark_logsource.read("memcached-tap", str(path), batchSize=3)
    expected = reference_rows(data)
    assert table.num_rows == len(expected) > 0
    assert table.column("_corrupt_record").null_count == table.num_rows
    rows = table.to_pylist()
    for got, want in zip(rows, expected, strict=True):
        assert got["source"] == str(path)
        assert {k: got[k] for k in want} == want
    # the chunked push buffer gives the same rows whatever the read size
    assert read_bytes(data, chunk=5).drop_columns(["source"]).to_pylist() == \
        table.drop_columns(["source"]).to_pylist()


def test_refused_takeover_capture_is_an_error_naming_file_and_offset() -> None:
    path = FIXTURES / "engine-pu-takeover.tap"
    table = spark_logsource.read("memcached-tap", str(path))
    assert table.num_rows == 1
    message = table.column("_corrupt_record")[0].as_py()
    assert f"{path} at byte 0" in message and "NOT_SUPPORTED" in message and "Not supported" in message
    with pytest.raises(CorruptDataError, match="at byte 0: server answered TAP_CONNECT with status 0x83"):
        spark_logsource.read("memcached-tap", str(path), mode="FAILFAST")
    assert spark_logsource.read("memcached-tap", str(path), mode="DROPMALFORMED").num_rows == 0


def test_engine_pu_flags_arrive_little_endian_and_read_as_set() -> None:
    # The note's workload for this capture: alpha flags 0, beta 0xDEADBEEF, gamma 7 with a 3600 s ttl.
    rows = spark_logsource.read("memcached-tap", str(FIXTURES / "engine-pu-dump-alpha.tap")).to_pylist()
    by_key = {r["key"]: r for r in rows}
    assert set(by_key) == {"alpha", "beta", "gamma"}
    assert by_key["beta"]["flags"] == 0xDEADBEEF
    assert by_key["gamma"]["flags"] == 7
    assert by_key["alpha"]["value"] == b"one"
    assert by_key["gamma"]["expiry"] >= 3600 and by_key["alpha"]["expiry"] == 0
    assert all(r["ttl"] == 255 and r["tap_flags"] == 0 for r in rows)


def test_couchbase_control_packets() -> None:
    rows = spark_logsource.read("memcached-tap", str(FIXTURES / "couchbase-1.8.1-takeover_vb0.tap")).to_pylist()
    states = [r["vbucket_state"] for r in rows if r["opcode"] == "VBUCKET_SET"]
    assert states == ["pending", "active"]
    codes = [r["opaque_code"] for r in rows if r["opcode"] == "OPAQUE"]
    assert codes == ["ENABLE_AUTO_NACK", "INITIAL_VBUCKET_STREAM", "CLOSE_BACKFILL"]
    flush_path = FIXTURES / "couchbase-1.8.1-registered_futureonly_flush.tap"
    flush_bytes = flush_path.read_bytes()
    flush = spark_logsource.read("memcached-tap", str(flush_path)).to_pylist()
    assert [r["checkpoint_id"] for r in flush if r["opcode"] == "CHECKPOINT_START"] == [1, 1]
    assert any(r["opcode"] == "FLUSH" and r["key"] is None for r in flush)
    assert [r["opcode"] for r in flush].count("NOOP") == flush_bytes.count(bytes.fromhex("800a" + "00" * 22))


DUMPS = ["engine-pu-dump", "engine-pu-flags_deadbeef", "engine-pu-binary_keys_300", "engine-pu-value_1mb",
         "engine-pu-backfill_age0", "couchbase-1.8.1-dump", "couchbase-1.8.1-dump_support_ack",
         "couchbase-1.8.1-list_vbuckets", "couchbase-1.8.1-takeover_vb0"]


@pytest.mark.parametrize("name", DUMPS)
def test_recorded_server_bytes_read_as_the_workloads_items(name: str) -> None:
    """Rows of what the server sent equal the items it held (key, value, flags as set, cas, expiry)."""
    rec = load_recording(name)
    data = b"".join(rec.packets(0, "s2c"))
    table = read_bytes(data)
    assert table.column("_corrupt_record").null_count == table.num_rows
    state = apply_rows(table.to_pylist())
    want = expected_items(rec.header)
    if name == "couchbase-1.8.1-takeover_vb0":  # after a takeover GETs answer NOT_MY_VBUCKET: items from workload
        want = {(0, bytes.fromhex(op["key_hex"])): {"value_hex": op["value_hex"], "flags": op["flags"]}
                for op in rec.header["workload"] if op.get("op") == "set"}
        want.pop((0, b"tk:deleted"), None)
    assert set(state) == set(want)
    expiries = workload_expiry(rec.header)
    for item_id, item in want.items():
        row = state[item_id]
        value = item_value(item)
        if value is not None:
            assert row["value"] == value
        else:
            assert len(row["value"]) == item["value_len"]
            assert hashlib.sha256(row["value"]).hexdigest() == item["value_sha256"]
        assert row["flags"] == item["flags"]
        if "cas" in item:
            assert row["cas"] == item["cas"]
        ttl = expiries.get(item_id[1])
        if ttl is not None:
            assert (row["expiry"] == 0) == (ttl == 0)
            if ttl and rec.header["server"] == "engine-pu":  # server-relative clock: uptime + ttl
                assert ttl <= row["expiry"] < ttl + 86400
            elif ttl:  # ep-engine: absolute epoch seconds
                assert 1_600_000_000 < row["expiry"] - ttl < 2_000_000_000
    for missing in rec.header.get("expected_missing", []):
        if name != "couchbase-1.8.1-takeover_vb0":
            assert (missing["vbucket"], bytes.fromhex(missing["key_hex"])) not in state


def test_keys_that_are_not_utf8_keep_their_bytes() -> None:
    rec = load_recording("engine-pu-binary_keys_300")
    rows = read_bytes(b"".join(rec.packets(0, "s2c"))).to_pylist()
    bad = [r for r in rows if r["key_bytes"] is not None]
    good = [r for r in rows if r["key_bytes"] is None]
    assert bad and good
    for r in bad:
        with pytest.raises(UnicodeDecodeError):
            r["key_bytes"].decode("utf-8")
        assert r["key"] == r["key_bytes"].decode("utf-8", "replace")
    assert all(r["key"].encode() for r in good)


@pytest.mark.parametrize("path", [*CAPTURES[:6], FIXTURES / "engine-pu-dump.tap"], ids=lambda p: p.name)
def test_truncated_captures_name_file_and_offset(path: Path) -> None:
    data = path.read_bytes()
    good = reference_rows(data)
    offsets = [r["offset"] for r in good]
    for cut in sorted({1, 23, 24, 25, len(data) // 2, len(data) // 2 + 1, len(data) - 1} - set(offsets)):
        part = data[:cut]
        table = read_bytes(part)
        corrupt = [r for r in table.to_pylist() if r["_corrupt_record"] is not None]
        assert len(corrupt) == 1
        last_start = max(o for o in offsets if o < cut)
        assert corrupt[0]["offset"] == last_start
        assert "mem.tap at byte" in corrupt[0]["_corrupt_record"] and "capture ends" in corrupt[0]["_corrupt_record"]
        assert table.num_rows == offsets.index(last_start) + 1
        with pytest.raises(TruncatedDataError) as info:
            read_bytes(part, ParseMode.FAILFAST)
        assert info.value.path == "mem.tap" and info.value.offset == corrupt[0]["offset"]


def test_absurd_body_length_is_refused_before_allocation_and_reading_resumes() -> None:
    data = bytearray((FIXTURES / "couchbase-1.8.1-dump_anon.tap").read_bytes())
    starts = [r["offset"] for r in reference_rows(bytes(data))]
    data[starts[1] + 8:starts[1] + 12] = b"\xff\xff\xff\xf0"
    table = read_bytes(bytes(data))
    corrupt = [r for r in table.to_pylist() if r["_corrupt_record"]]
    assert [r["offset"] for r in corrupt] == [starts[1]]
    assert "over the limit" in corrupt[0]["_corrupt_record"]
    assert [r["offset"] for r in table.to_pylist() if not r["_corrupt_record"]] == [starts[0], *starts[2:]]
    # a length under the cap but past the end of the file: truncated, then the following packets still read
    data[starts[1] + 8:starts[1] + 12] = (10_000_000).to_bytes(4, "big")
    table = read_bytes(bytes(data), chunk=64)
    assert [r["offset"] for r in table.to_pylist() if not r["_corrupt_record"]] == [starts[0], *starts[2:]]
    with pytest.raises(CorruptDataError, match=f"at byte {starts[1]}"):
        read_bytes(bytes(data), ParseMode.FAILFAST)


def test_flipped_bytes_never_hang_or_crash() -> None:
    rng = random.Random(7)
    captures = [p.read_bytes() for p in CAPTURES]
    began = time.monotonic()
    for _ in range(400):
        data = bytearray(rng.choice(captures))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        table = read_bytes(bytes(data), chunk=rng.choice([7, 64, 1 << 20]))
        for row in table.to_pylist():
            assert row["offset"] is not None and 0 <= row["offset"] < len(data)
            if row["_corrupt_record"] is not None:
                assert "mem.tap at byte" in row["_corrupt_record"]
        try:
            read_bytes(bytes(data), ParseMode.FAILFAST)
        except CorruptDataError as exc:
            assert exc.path == "mem.tap" and exc.offset is not None
    assert time.monotonic() - began < 60


def test_engine_specific_length_past_the_body_is_a_corrupt_row() -> None:
    data = bytearray((FIXTURES / "couchbase-1.8.1-dump_anon.tap").read_bytes())
    starts = [r["offset"] for r in reference_rows(bytes(data))]
    data[starts[2] + 24:starts[2] + 26] = b"\x7f\x00"  # a mutation's engine-specific length
    rows = read_bytes(bytes(data)).to_pylist()
    assert len(rows) == len(starts)
    bad = rows[2]
    assert bad["offset"] == starts[2] and bad["opcode"] is None and bad["key"] is None
    assert f"at byte {starts[2] + 24}" in bad["_corrupt_record"]
    dropped = read_bytes(bytes(data), ParseMode.DROPMALFORMED).to_pylist()
    assert [r["offset"] for r in dropped] == starts[:2] + starts[3:]


def test_reference_batch_equals_bulk_batch_for_every_recording() -> None:
    schema = tap_schema(None)
    for name in recording_names():
        rec = load_recording(name)
        for i in range(len(rec.conversations)):
            data = b"".join(rec.packets(i, "s2c"))
            if not data or data[0] != 0x80:
                continue
            rows = reference_rows(data)
            want = rows_to_batch(rows, "mem.tap", [r["offset"] for r in rows], None, schema)
            got = read_bytes(data, ParseMode.DROPMALFORMED)
            assert pa.Table.from_batches([want]).equals(got), name


def test_vector_framing_equals_one_packet_at_a_time() -> None:
    """C, numpy and one-at-a-time framing accept exactly the same packets, on real bytes and on damaged ones."""
    from spark_logsource.memcached.protocol import _frame_loop, frame_python

    rng = random.Random(11)
    streams = [b"".join(load_recording(n).packets(i, "s2c")) for n in recording_names()
               for i in range(len(load_recording(n).conversations))]
    streams = [s for s in streams if s]
    for _ in range(300):
        data = bytearray(b"".join(rng.choice(streams) for _ in range(rng.randint(1, 6))))
        for _ in range(rng.randint(0, 3)):
            data[rng.randrange(len(data))] = rng.choice([0x80, 0x41, 0x10, 0x00, 0xFF, rng.randrange(256)])
        cut = rng.randint(len(data) // 2, len(data))
        want = _frame_loop(bytes(data), 0, cut, 1 << 20, 1 << 30)[:3]
        assert frame(bytes(data), 0, cut, 1 << 20) == want  # the C kernel when built
        assert frame(data, 0, cut, 1 << 20) == want  # the socket buffer is a bytearray
        assert frame_python(bytes(data), 0, cut, 1 << 20) == want
        assert frame_python(data, 0, cut, 1 << 20) == want
