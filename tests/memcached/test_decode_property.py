"""The bulk (numpy) decoder equals the per-packet reference on generated packets (our writer + our readers).

Both bulk paths are checked, over the ``twin`` fixture: the C kernel (``_kernel.c``) and numpy. Real-server bytes
are covered by test_capture; this adds the corners no recording has: network-order flags,
NO_VALUE, engine-specific bytes, unknown opcodes and codes, error responses, lying engine-specific lengths.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_logsource.errors import DecodeError
from spark_logsource.memcached.protocol import REQUEST_MAGIC, RESPONSE_MAGIC, TAP_EXTRAS, encode_packet, frame
from spark_logsource.memcached.tap import COLUMNS, BulkResult, decode_bulk, decode_packet
from tests.support.twins import Twin

#: The twin is chosen once per test (the generated examples share it; each builds its own input).
PER_TEST = [HealthCheck.function_scoped_fixture]

OPCODES = [*TAP_EXTRAS, 0x0A, 0x33]


@st.composite
def packets(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 20)) == 0:
        status = draw(st.sampled_from([0, 0x83, 0x20]))
        return encode_packet(RESPONSE_MAGIC, 0x40, value=draw(st.binary(max_size=20)), vbucket_or_status=status)
    opcode = draw(st.sampled_from(OPCODES))
    key = draw(st.one_of(st.binary(max_size=12), st.text(max_size=6).map(str.encode)))
    value = draw(st.binary(max_size=24))
    header = dict(vbucket_or_status=draw(st.integers(0, 1023)), opaque=draw(st.integers(0, 2**32 - 1)),
                  cas=draw(st.integers(0, 2**63 - 1)))
    if opcode not in TAP_EXTRAS:
        return encode_packet(REQUEST_MAGIC, opcode, key=key, value=value, **header)
    es = draw(st.binary(max_size=10))
    if opcode in (0x44, 0x45) and draw(st.booleans()):
        es = struct.pack(">I", draw(st.integers(0, 40)))
    tap_flags = draw(st.integers(0, 7))
    lie = draw(st.integers(0, 10)) == 0  # an engine-specific length that does not fit
    nes = len(es) + (len(key) + len(value) + 1 if lie else 0)
    extras = struct.pack(">HHB3x", nes, tap_flags, draw(st.integers(0, 255)))
    if TAP_EXTRAS[opcode] == 16:
        extras += struct.pack(">II", draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)))
    return encode_packet(REQUEST_MAGIC, opcode, key=key, extras=extras, value=es + value, **header)


@settings(max_examples=300, deadline=None, suppress_health_check=PER_TEST)
@given(st.lists(packets(), min_size=1, max_size=12))
def test_bulk_decoder_equals_reference(twin: Twin, items: list[bytes]) -> None:
    data = b"".join(items)
    starts, end, problem = frame(data, 0, len(data), 1 << 20)
    assert problem is None and end == len(data) and len(starts) == len(items)
    check(items, decode_bulk(data, starts))


def check(items: list[bytes], result: BulkResult) -> None:
    for i, packet in enumerate(items):
        try:
            want = decode_packet(packet)
        except DecodeError as exc:
            assert i in result.bad and result.bad[i].reason == exc.reason
            continue
        if want is None:
            assert i in result.skip
            continue
        got = {name: col[i].as_py() for (name, _), col in zip(COLUMNS[2:], result.columns, strict=True)}
        assert got == want
    assert all(isinstance(c, pa.Array) and len(c) == len(items) for c in result.columns)


def test_kernel_is_built_and_used(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk decoder, the framer and the acknowledgements run the compiled twin on "c" (so the properties here
    test it) and numpy / Python on "python"."""
    from spark_logsource.memcached import client, protocol, tap

    used: list[str] = []
    for module, name in ((tap, "_columns_numpy"), (protocol, "frame_python"), (client, "ack_requests_numpy")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, name=name, **k: used.append(name) or real(*a, **k))
    packet = encode_packet(REQUEST_MAGIC, 0x41, key=b"k", extras=struct.pack(">HHB3xII", 0, 1, 255, 0, 0), value=b"v")
    starts, _, _ = protocol.frame(packet, 0, len(packet), 1 << 20)
    assert list(starts) == [0]
    assert tap.decode_bulk(packet, starts).columns[3].to_pylist() == ["k"]
    assert client.ack_requests(packet, starts) == [(0x41, 0)]
    assert used == ([] if twin.is_c else ["frame_python", "_columns_numpy", "ack_requests_numpy"])


PIECES = [b"a", b"\xd0\xba", b"\xe9\x8d\xb5", b"\xf0\x9f\x98\x80", b"\xff", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80",
          b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\x00", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98",
          b"\xf5", b"\xe0\xa0", b"\xed\x9f\xbf", b"\xf4\x8f\xbf\xbf", b"\xc2\x80"]


@settings(max_examples=200, deadline=None, suppress_health_check=PER_TEST)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=6).map(b"".join), min_size=1, max_size=40))
def test_keys_that_are_not_utf8_read_like_python_decodes_them(twin: Twin, keys: list[bytes]) -> None:
    extras = struct.pack(">HHB3xII", 0, 0, 255, 0, 0)
    data = b"".join(encode_packet(REQUEST_MAGIC, 0x41, key=k, extras=extras, value=b"v") for k in keys)
    starts, _, _ = frame(data, 0, len(data), 1 << 20)
    result = decode_bulk(data, starts)
    key_col, key_bytes_col = result.columns[3], result.columns[4]
    assert key_col.to_pylist() == [k.decode("utf-8", "replace") for k in keys]
    assert key_bytes_col.to_pylist() == [None if _valid(k) else k for k in keys]
    key_col.validate(full=True)


def _valid(key: bytes) -> bool:
    try:
        key.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=PER_TEST)
@given(st.lists(packets(), min_size=1, max_size=12))
def test_acks_are_the_tap_packets_that_ask_for_one(twin: Twin, items: list[bytes]) -> None:
    from spark_logsource.memcached.client import ack_requests

    data = b"".join(items)
    starts, _, _ = frame(data, 0, len(data), 1 << 20)
    want = [(p[1], int.from_bytes(p[12:16], "big")) for p in items
            if p[0] == REQUEST_MAGIC and p[1] in TAP_EXTRAS and p[27] & 1]
    assert ack_requests(data, starts) == want
