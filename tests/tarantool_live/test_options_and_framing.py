"""Options of ``tarantool-replication`` and the packet framer (no server needed)."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_logsource.errors import OptionError, SourceError
from spark_logsource.net import Secret
from spark_logsource.registry import format_class
from spark_logsource.tarantool.stream.handshake import Endpoint
from spark_logsource.tarantool.stream.live import make_offset, parse_offset
from spark_logsource.tarantool.stream.packets import PacketBuffer
from tests.support.twins import Twin

FORMAT = "tarantool-replication"


def _fmt(**options: object):
    return format_class(FORMAT)(options)


def test_uri_and_password_options() -> None:
    fmt = _fmt(uri="tarantool://cdc@db.example:3301", password="pw-1")
    assert fmt.endpoint == Endpoint("db.example", 3301, "cdc")
    assert fmt.password.reveal() == "pw-1" and repr(fmt.password) == "'***'"
    assert fmt.endpoint.display == "tarantool://db.example:3301"
    from_path = format_class(FORMAT)({"path": "tarantool://cdc:pw-2@db.example:3302"})
    assert from_path.password.reveal() == "pw-2" and from_path.endpoint.port == 3302


@pytest.mark.parametrize(("options", "option", "message"), [
    ({}, "uri", "no server given"),
    ({"uri": "http://cdc:topsecret@db:80"}, "uri", "expected tarantool://"),
    ({"uri": "tarantool://cdc:topsecret@db:notaport"}, "uri", "not a tarantool://"),
    ({"uri": "tarantool://db:3301", "startingPosition": "yesterday"}, "startingPosition", "JSON vclock"),
    ({"uri": "tarantool://db:3301", "startingPosition": '{"kind": "tarantool-dir", "v": 1}'}, "startingPosition",
     "not a tarantool-replication offset"),
    ({"uri": "tarantool://db:3301", "endingPosition": "snapshot"}, "endingPosition", "JSON vclock"),
    ({"uri": "tarantool://db:3301", "readTimeout": "-1"}, "readTimeout", "seconds"),
    ({"uri": "tarantool://db:3301", "ackInterval": "soon"}, "ackInterval", "seconds"),
    ({"uri": "tarantool://db:3301", "startingPostion": "latest"}, "startingPostion", "did you mean"),
])
def test_bad_options_name_the_option_and_hide_passwords(options: dict, option: str, message: str) -> None:
    with pytest.raises(OptionError, match=message) as info:
        _fmt(**options)
    assert info.value.option == option
    assert "topsecret" not in str(info.value)


def test_offsets_round_trip_with_fixed_key_order() -> None:
    offset = make_offset("rs-uuid", {2: 7, 1: 5120, 0: 99, 3: 0})
    assert list(offset) == ["v", "kind", "replicaset", "vclock"]
    assert offset["vclock"] == {"1": 5120, "2": 7}  # component 0 and zeros left out, numeric order
    position = parse_offset(offset)
    assert position.vclock == {1: 5120, 2: 7} and not position.snapshot
    snap = make_offset("rs-uuid", {}, snapshot=True)
    assert list(snap) == ["v", "kind", "replicaset", "vclock", "snapshot"] and parse_offset(snap).snapshot


def test_secret_pickles_for_executors_but_never_prints() -> None:
    import pickle

    secret = Secret("pw-3")
    assert pickle.loads(pickle.dumps(secret)).reveal() == "pw-3"
    assert "pw-3" not in repr(secret) and "pw-3" not in str(secret) and "pw-3" not in f"{secret}"


def _packet(header: dict, body: dict | None) -> bytes:
    payload = msgpack.packb(header) + (msgpack.packb(body) if body is not None else b"")
    return b"\xce" + len(payload).to_bytes(4, "big") + payload


_headers = st.fixed_dictionaries({0: st.sampled_from([0, 2, 3, 4, 5, 9, 40, 0x8020]), 1: st.integers(0, 300),
                                  2: st.integers(0, 3), 3: st.integers(0, 1 << 40)})
_bodies = st.none() | st.dictionaries(st.sampled_from([0x10, 0x21, 0x20]),
                                      st.integers(0, 1 << 20) | st.binary(max_size=300), max_size=3)


def test_the_framer_is_the_twins(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    """take_rows runs the C framer on the "c" twin (so the property below tests it), the reference on "python"."""
    frames = twin.kernel("spark_logsource.tarantool._frames")
    calls: list[str] = []
    monkeypatch.setattr(PacketBuffer, "take_rows_py", lambda *args, **kwargs: calls.append("python"))
    buffer = PacketBuffer("tarantool://test:1")
    buffer.feed(_packet({0: 2, 1: 1}, {0x10: 512}))
    out, bounds = bytearray(), []
    buffer.take_rows(out, bounds, limit=7)
    assert calls == ([] if frames else ["python"])
    assert (len(bounds), len(out)) == ((1, bounds[0]) if frames else (0, 0))


# the twin is chosen once per test; each generated example starts from a fresh PacketBuffer
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_headers, _bodies), min_size=1, max_size=30), st.lists(st.integers(1, 400), max_size=40))
def test_framer_gives_every_packet_whatever_the_chunking(twin: Twin, packets: list, cuts: list[int]) -> None:
    """Property test of our own framer (both twins): fed in arbitrary chunks, take_rows + next give every packet
    once, in order, and take_rows' rows equal the packet without its sync entry."""
    wire = b"".join(_packet(h, b) for h, b in packets)
    buffer = PacketBuffer("tarantool://test:1")
    got: list[tuple[dict, dict | None]] = []
    pos = 0
    chunks = []
    for cut in cuts:
        chunks.append(wire[pos : pos + cut])
        pos += cut
    chunks.append(wire[pos:])
    for chunk in chunks:
        buffer.feed(chunk)
        while True:
            out, bounds = bytearray(), []
            buffer.take_rows(out, bounds, limit=7)
            start = 0
            for end in bounds:
                unpacker = msgpack.Unpacker(strict_map_key=False)
                unpacker.feed(bytes(out[start:end]))
                items = list(unpacker)
                got.append((items[0], items[1] if len(items) > 1 else None))
                start = end
            if bounds:
                continue
            raw = buffer.next()
            if raw is None:
                break
            items = _unpack_all(raw)
            header = dict(items[0])
            header.pop(1, None)
            got.append((header, items[1] if len(items) > 1 else None))
    expected = [({k: v for k, v in h.items() if k != 1}, b) for h, b in packets]
    assert got == expected


def _unpack_all(raw: bytes) -> list:
    unpacker = msgpack.Unpacker(strict_map_key=False)
    unpacker.feed(raw)
    return list(unpacker)


def test_framer_refuses_absurd_lengths_and_non_integer_prefixes() -> None:
    buffer = PacketBuffer("tarantool://test:1", max_packet=1000)
    buffer.feed(b"\xce\x00\x00\x10\x00")
    with pytest.raises(SourceError, match="4096 bytes announced, more than the 1000-byte limit"):
        buffer.next()
    buffer = PacketBuffer("tarantool://test:1")
    buffer.feed(b"\xa5hello")
    with pytest.raises(SourceError, match="not a msgpack unsigned integer"):
        buffer.next()
