"""The live TAP client against a loopback server replaying what two real servers sent and waited for."""

from __future__ import annotations

import io
import time

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.errors import OptionError, SourceError
from spark_logsource.memcached.capture import iter_capture_batches
from spark_logsource.memcached.client import (
    TAKEOVER_VBUCKETS,
    TapConnection,
    ack_requests,
    dump_chunks,
    parse_tap_uri,
)
from spark_logsource.memcached.protocol import encode_ack
from spark_logsource.memcached.tap import BatchSpec, packet_batches, tap_schema
from spark_logsource.options import ParseMode
from tests.memcached.helpers import spec_from_recording
from tests.memcached.replay import Recording, ReplayServer, load_recording, recording_names
from tests.support.waiting import STATE_TIMEOUT

SCHEMA = tap_schema("_corrupt_record")


def capture_rows(data: bytes) -> list[dict]:
    """Rows of recorded server bytes read as a capture, without the source/offset columns."""
    spec = BatchSpec("x", SCHEMA, 1000, ParseMode.PERMISSIVE)
    table = pa.Table.from_batches(list(iter_capture_batches(io.BytesIO(data), "x", len(data), spec, 32 << 20)),
                                  schema=SCHEMA)
    return table.drop_columns(["source", "offset"]).to_pylist()


def live_rows(table: pa.Table) -> list[dict]:
    return table.drop_columns(["source", "offset"]).to_pylist()


def assert_acked_exactly_as_recorded(server: ReplayServer, rec: Recording, conversation: int = 0) -> None:
    log = server.logs[conversation]
    assert log.connect_matched, "TAP_CONNECT differs from the recorded one"
    assert log.mismatches == []
    assert log.waiting_for is None, "the server waited for an ACK we never sent"
    assert log.client_packets == rec.client_packets(conversation)
    assert log.extra == b"", "we sent something the real client did not"


@pytest.mark.parametrize("name", recording_names())
def test_connect_bytes_equal_the_recorded_ones(name: str) -> None:
    rec = load_recording(name)
    for i, tap_connect in enumerate(rec.header["tap_connect"]):
        spec = spec_from_recording(tap_connect)
        assert spec.flags == tap_connect["flags"]
        assert spec.encode(opaque=tap_connect["opaque"]) == rec.connect(i)


ONE_SHOT = [n for n in recording_names() if load_recording(n).end_event(0) == "server_closed"
            and n != "engine-pu-takeover_error"]


@pytest.mark.parametrize("name", ONE_SHOT)
def test_one_shot_streams_read_all_and_ack_exactly_what_the_server_waited_for(name: str) -> None:
    rec = load_recording(name)
    spec = spec_from_recording(rec.header["tap_connect"][0])
    batch_spec = BatchSpec("tap://replay", SCHEMA, 1000, ParseMode.FAILFAST)
    with ReplayServer(rec) as server:
        rows = []
        with TapConnection(parse_tap_uri(server.uri), spec, read_timeout=10) as conn:
            for chunk in dump_chunks(conn):
                for batch in packet_batches(batch_spec, chunk.data, chunk.starts, None, lambda p, e: e.at("x", p)):
                    rows += batch.to_pylist()
            acks = conn.acks_sent
        server.wait_finished(1)
        assert_acked_exactly_as_recorded(server, rec)
    want = capture_rows(b"".join(rec.packets(0, "s2c")))
    assert [{k: r[k] for k in want[0]} for r in rows] == want
    assert all(r["source"] == "tap://replay" and r["offset"] is None for r in rows)
    assert [encode_ack(op, opaque) for op, opaque in acks] == rec.client_packets(0)


@pytest.mark.parametrize("buffer_size", [256, 4096])
@pytest.mark.parametrize("name", ["engine-pu-binary_keys_300", "engine-pu-value_1mb",
                                  "couchbase-1.8.1-dump_support_ack"])
def test_small_receive_buffers_give_the_same_rows_and_acks(name: str, buffer_size: int) -> None:
    """Packets that straddle the reused receive buffers, and packets larger than them (which go through the
    connection's own growing buffer), read like the capture; each chunk is decoded before the next is asked for."""
    rec = load_recording(name)
    spec = spec_from_recording(rec.header["tap_connect"][0])
    batch_spec = BatchSpec("tap://replay", SCHEMA, 1000, ParseMode.FAILFAST)
    with ReplayServer(rec) as server:
        rows = []
        with TapConnection(parse_tap_uri(server.uri), spec, read_timeout=10) as conn:
            for chunk in dump_chunks(conn, buffer_size=buffer_size):
                for batch in packet_batches(batch_spec, chunk.data, chunk.starts, None, lambda p, e: e.at("x", p)):
                    rows += batch.drop_columns(["source", "offset"]).to_pylist()
        server.wait_finished(1)
        assert_acked_exactly_as_recorded(server, rec)
    assert rows == capture_rows(b"".join(rec.packets(0, "s2c")))


def test_a_caller_away_does_not_hold_back_the_acks() -> None:
    """While the caller works on a chunk, a keeper thread reads on and answers every ACK the server waits for."""
    rec = load_recording("couchbase-1.8.1-dump_support_ack")
    spec = spec_from_recording(rec.header["tap_connect"][0])
    batch_spec = BatchSpec("tap://replay", SCHEMA, 1000, ParseMode.FAILFAST)
    with ReplayServer(rec) as server:
        rows = []
        with TapConnection(parse_tap_uri(server.uri), spec, read_timeout=10) as conn:
            chunks = dump_chunks(conn)
            first = next(chunks)
            acked_before = len(conn.acks_sent)
            deadline = time.monotonic() + STATE_TIMEOUT
            while len(conn.acks_sent) < len(rec.client_packets(0)) and time.monotonic() < deadline:
                time.sleep(0.05)  # the caller is away: nothing asks dump_chunks for a chunk
            acked_while_away = list(conn.acks_sent)
            chunk = first
            while chunk is not None:  # each chunk decoded before the next is asked for (its buffer is reused)
                for batch in packet_batches(batch_spec, chunk.data, chunk.starts, None, lambda p, e: e.at("x", p)):
                    rows += batch.drop_columns(["source", "offset"]).to_pylist()
                chunk = next(chunks, None)
        server.wait_finished(1)
        assert_acked_exactly_as_recorded(server, rec)
    assert acked_before < len(rec.client_packets(0))  # the server waited for ACKs after the first chunk
    assert [encode_ack(op, opaque) for op, opaque in acked_while_away] == rec.client_packets(0)
    assert rows == capture_rows(b"".join(rec.packets(0, "s2c")))


DUMP_READS = {  # recordings of a DUMP or a TAKEOVER → the reader options that ask for the same
    "engine-pu-dump": {"ack": False},
    "engine-pu-flags_deadbeef": {"ack": False},
    "engine-pu-binary_keys_300": {"ack": False},
    "engine-pu-value_1mb": {"ack": False},
    "couchbase-1.8.1-dump": {"ack": False},
    "couchbase-1.8.1-dump_support_ack": {},
    "couchbase-1.8.1-takeover_vb0": {"takeover": "true", "vbuckets": "0"},
}


@pytest.mark.parametrize("name", sorted(DUMP_READS))
def test_batch_read_of_a_live_server(name: str) -> None:
    rec = load_recording(name)
    conn_name = bytes.fromhex(rec.header["tap_connect"][0]["name_hex"]).decode()
    with ReplayServer(rec) as server:
        table = spark_logsource.read("memcached-tap", [], uri=server.uri, name=conn_name, **DUMP_READS[name])
        server.wait_finished(1)
        assert_acked_exactly_as_recorded(server, rec)
    assert table.schema == SCHEMA
    assert set(table.column("source").to_pylist()) == {server.uri}
    assert table.column("offset").null_count == table.num_rows
    assert live_rows(table) == capture_rows(b"".join(rec.packets(0, "s2c")))


def test_server_named_as_the_path() -> None:
    rec = load_recording("engine-pu-dump")
    with ReplayServer(rec) as server:
        table = spark_logsource.read("memcached-tap", server.uri, name="fixture-dump", ack=False)
        server.wait_finished(1)
        assert server.logs[0].connect_matched
    assert live_rows(table) == capture_rows(b"".join(rec.packets(0, "s2c")))
    with pytest.raises(OptionError, match="alone"):
        spark_logsource.read("memcached-tap", [server.uri, "x.tap"])


def test_takeover_only_when_asked_for_explicitly() -> None:
    from spark_logsource.api import make_format

    for options in ({}, {"vbuckets": "0"}, {"vbuckets": "0,1", "takeover": "false"}, {"keysOnly": "true"}):
        fmt = make_format("memcached-tap", [], {"uri": "tap://127.0.0.1:1", **options})
        assert not fmt.dump_spec().flags & TAKEOVER_VBUCKETS
    fmt = make_format("memcached-tap", [], {"uri": "tap://127.0.0.1:1", "vbuckets": "0", "takeover": "true"})
    assert fmt.dump_spec().flags & TAKEOVER_VBUCKETS
    for bad in ("yes", "1", "on"):
        with pytest.raises(OptionError, match="takeover"):
            make_format("memcached-tap", [], {"uri": "tap://127.0.0.1:1", "vbuckets": "0", "takeover": bad})
    with pytest.raises(OptionError, match="vbuckets"):
        make_format("memcached-tap", [], {"uri": "tap://127.0.0.1:1", "takeover": "true"})
    with pytest.raises(OptionError, match="one-shot"):
        make_format("memcached-tap", [], {"uri": "tap://127.0.0.1:1", "vbuckets": "0", "takeover": "true",
                                          "name": "x"}).stream()


def test_refused_tap_connect_is_a_source_error() -> None:
    rec = load_recording("engine-pu-takeover_error")
    with ReplayServer(rec) as server:
        with pytest.raises(SourceError, match="status 0x83 NOT_SUPPORTED: 'Not supported'") as info:
            spark_logsource.read("memcached-tap", [], uri=server.uri, name="fixture-takeover", vbuckets="0",
                                 takeover="true")
        assert info.value.source == server.uri and info.value.position == "stream byte 0"
        server.wait_finished(1)


def test_connection_cut_mid_packet() -> None:
    rec = load_recording("couchbase-1.8.1-dump")
    with ReplayServer(rec, cut_after=100) as server:
        with pytest.raises(SourceError, match="closed inside a packet") as info:
            spark_logsource.read("memcached-tap", [], uri=server.uri, name="fixture-dump", ack=False)
        assert server.uri in str(info.value)


def test_silent_server_read_timeout_fires() -> None:
    rec = load_recording("couchbase-1.8.1-dump")
    with ReplayServer(rec, silent=True) as server:
        began = time.monotonic()
        with pytest.raises(SourceError, match="read timeout"):
            spark_logsource.read("memcached-tap", [], uri=server.uri, name="fixture-dump", ack=False,
                                 readTimeout=0.5)
        assert time.monotonic() - began < 5


def test_keepalives_alone_do_not_keep_a_dump_waiting() -> None:
    """The real server's start-up state: a DUMP answered only by NOOPs (couchbase-1.8.1-dump.tap)."""
    from tests.memcached.replay import CONVERSATIONS

    noops = (CONVERSATIONS.parent / "couchbase-1.8.1-dump.tap").read_bytes()
    assert len(noops) % 24 == 0 and noops[1] == 0x0A
    base = load_recording("couchbase-1.8.1-dump")
    events = [base.conversations[0][0]] + [{"dir": "s2c", "t": 0.1 * (i + 1), "hex": noops[i:i + 24].hex()}
                                           for i in range(0, len(noops), 24)]
    rec = Recording("noops", base.header, [events])
    with ReplayServer(rec, time_scale=1.0) as server:
        began = time.monotonic()
        with pytest.raises(SourceError, match="read timeout"):
            spark_logsource.read("memcached-tap", [], uri=server.uri, name="fixture-dump", ack=False,
                                 readTimeout=0.8)
        assert time.monotonic() - began < 5


@pytest.mark.parametrize("length", [0xFFFFFFF0, 40 << 20])
def test_absurd_body_length_from_a_server(length: int) -> None:
    rec = load_recording("couchbase-1.8.1-dump")
    bogus = bytes.fromhex("8041000510000000") + length.to_bytes(4, "big") + bytes(12)
    with ReplayServer(rec, inject=bogus, inject_after=2) as server:
        with pytest.raises(SourceError, match="over the limit") as info:
            spark_logsource.read("memcached-tap", [], uri=server.uri, name="fixture-dump", ack=False)
        first_two = sum(len(p) for p in rec.packets(0, "s2c")[:2])
        assert info.value.position == f"stream byte {first_two}"


def test_never_acking_stall_is_not_ours() -> None:
    """The recorded client set SUPPORT_ACK and never acked: the server stalled. Ours acks both OPAQUEs at once."""
    rec = load_recording("couchbase-1.8.1-never_acks_stall")
    spec = spec_from_recording(rec.header["tap_connect"][0])
    with ReplayServer(rec) as server:
        with TapConnection(parse_tap_uri(server.uri), spec, read_timeout=5) as conn:
            got = 0
            deadline = time.monotonic() + STATE_TIMEOUT
            while got < len(rec.packets(0, "s2c")) and time.monotonic() < deadline:
                chunk = conn.read(0.5)
                assert chunk is not None
                conn.send_acks(ack_requests(chunk.data, chunk.starts))
                got += len(chunk.starts)
            time.sleep(0.1)
        server.wait_finished(1)
        log = server.logs[0]
    asked = [p for p in rec.packets(0, "s2c") if p[1] == 0x44 and p[27] & 1]
    assert len(asked) == 2
    assert log.extra == b"".join(encode_ack(0x44, int.from_bytes(p[12:16], "big")) for p in asked)


def test_list_vbuckets_stream_without_acks() -> None:
    rec = load_recording("couchbase-1.8.1-list_vbuckets")
    spec = spec_from_recording(rec.header["tap_connect"][0])
    want = capture_rows(b"".join(rec.packets(0, "s2c")))
    rows: list[dict] = []
    batch_spec = BatchSpec("s", SCHEMA, 1000, ParseMode.FAILFAST)
    with ReplayServer(rec) as server:
        with TapConnection(parse_tap_uri(server.uri), spec) as conn:
            deadline = time.monotonic() + STATE_TIMEOUT
            while len(rows) < len(want) and time.monotonic() < deadline:
                chunk = conn.read(0.5)
                assert chunk is not None
                for batch in packet_batches(batch_spec, chunk.data, chunk.starts, None, lambda p, e: e.at("s", p)):
                    rows += batch.drop_columns(["source", "offset"]).to_pylist()
        server.wait_finished(1)
        assert server.logs[0].connect_matched and server.logs[0].extra == b""
    assert rows == want
    assert {r["vbucket"] for r in rows if r["opcode"] == "MUTATION"} == {0, 1}


def test_credentials_never_show() -> None:
    fmt_uri = "tap://bucket:s3cr3t-pw@127.0.0.1:1"
    endpoint = parse_tap_uri(fmt_uri)
    assert endpoint.source == "tap://127.0.0.1:1" and "s3cr3t" not in repr(endpoint)
    with pytest.raises(SourceError) as info:
        spark_logsource.read("memcached-tap", [], uri=fmt_uri, connectTimeout=2)
    assert "s3cr3t" not in str(info.value) and "bucket" not in str(info.value)
    with pytest.raises(OptionError) as bad:
        spark_logsource.read("memcached-tap", [], uri="http://u:s3cr3t@host:1")
    assert "s3cr3t" not in str(bad.value)
