"""The dump's packet framer (spark_logsource/mysql/stream/packets.py) on byte streams cut every way a socket can
cut them: each payload comes out whole and in order, a continued payload (16 MiB - 1 bytes, then the rest) comes
out joined, and the end and error packets stop it."""

from __future__ import annotations

import random

import pytest

from spark_logsource.mysql.stream.packets import BLOCK, MAX_PAYLOAD, PacketFramer, is_end


def _packet(payload: bytes, seq: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq & 0xFF]) + payload


def _wire(payloads: list[bytes]) -> bytes:
    out = bytearray()
    seq = 1
    for payload in payloads:
        while len(payload) >= MAX_PAYLOAD:  # the protocol's split: full packets, then the rest (maybe empty)
            out += _packet(payload[:MAX_PAYLOAD], seq)
            payload = payload[MAX_PAYLOAD:]
            seq += 1
        out += _packet(payload, seq)
        seq += 1
    return bytes(out)


def _frame(wire: bytes, cuts: list[int]) -> tuple[list[bytes], PacketFramer]:
    """Feed ``wire`` to a framer in reads ending at ``cuts`` (each read no larger than the room it offers)."""
    framer = PacketFramer()
    got: list[bytes] = []
    at = 0
    for end in [*cuts, len(wire)]:
        while at < end:
            room = framer.room()
            n = min(len(room), end - at)
            room[:n] = wire[at:at + n]
            at += n
            got += [bytes(p) for p in framer.feed(n)]
    return got, framer


def _events(rng: random.Random, count: int) -> list[bytes]:
    return [b"\x00" + rng.randbytes(rng.choice([19, 60, 800, 8200, 70_000, 300_000])) for _ in range(count)]


@pytest.mark.parametrize("seed", range(6))
def test_payloads_come_out_whole_however_the_socket_cuts_them(seed: int) -> None:
    rng = random.Random(seed)
    payloads = [*_events(rng, 60), b"\xfe\x00\x00\x02\x00"]
    wire = _wire(payloads)
    cuts = sorted(rng.sample(range(1, len(wire)), 40)) if seed % 2 else list(range(1, 200))  # 1-byte reads too
    got, framer = _frame(wire, cuts)
    assert got == payloads
    assert framer.done and is_end(got[-1])


def test_one_read_of_many_packets_counts_their_bytes() -> None:
    payloads = _events(random.Random(7), 30)
    wire = _wire(payloads)
    framer = PacketFramer()
    room = framer.room()
    n = min(len(room), len(wire))
    room[:n] = wire[:n]
    batch = framer.feed(n)
    assert len(batch) > 1 and batch.nbytes == sum(len(p) for p in batch)
    assert [bytes(p) for p in batch] == payloads[:len(batch)]


def test_a_continued_payload_is_joined() -> None:
    big = b"\x00" + random.Random(3).randbytes(MAX_PAYLOAD + 1000)  # two packets: 16 MiB - 1 bytes, then the rest
    exact = b"\x00" + bytes(MAX_PAYLOAD - 1)  # exactly 16 MiB - 1: followed by an empty packet
    payloads = [b"\x00" + bytes(40), big, exact, b"\x00" + bytes(25), b"\xfe\x00\x00\x02\x00"]
    wire = _wire(payloads)
    got, framer = _frame(wire, [BLOCK - 3, BLOCK + 5, MAX_PAYLOAD + 2])
    assert [len(p) for p in got] == [len(p) for p in payloads]
    assert got == payloads and framer.done


def test_an_error_packet_ends_the_stream() -> None:
    error = b"\xff" + (1236).to_bytes(2, "little") + b"#HY000" + b"Could not find first log file name"
    wire = _wire([b"\x00" + bytes(30), error]) + _packet(b"\x00" + bytes(30), 9)
    got, framer = _frame(wire, [])
    assert got == [b"\x00" + bytes(30), error]
    assert framer.done
    assert not is_end(error) and is_end(b"\xfe\x00\x00\x02\x00") and not is_end(b"\xfe" + bytes(20))


def test_a_payload_continued_without_end_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of continuation packets that never ends (damage, or a hostile peer) stops at the bound instead of
    joining without one; the bound is lowered here so that the test moves megabytes, not a gigabyte."""
    import spark_logsource.mysql.stream.packets as packets

    monkeypatch.setattr(packets, "MAX_JOINED", 3 * MAX_PAYLOAD)
    full = _packet(bytes(MAX_PAYLOAD), 1)
    framer = PacketFramer()
    with pytest.raises(packets.PacketTooLarge):
        for _ in range(5):
            wire = memoryview(full)
            while wire:
                room = framer.room()
                n = min(len(room), len(wire))
                room[:n] = wire[:n]
                wire = wire[n:]
                assert framer.feed(n) == []
    assert framer.done
