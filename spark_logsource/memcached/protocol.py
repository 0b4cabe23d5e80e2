"""memcached binary-protocol framing as TAP uses it: the 24-byte header, packet checks, a push buffer, encoders.

Layouts are in ``docs/formats/memcached-tap.md``. Every length read from the wire is checked against a cap before
anything is allocated for it, so a lying server or a damaged capture costs at most ``max_body`` bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spark_logsource.errors import DecodeError
from spark_logsource.native import load_kernel

_KERNEL = load_kernel("spark_logsource.memcached._kernel")

#: magic, opcode, key length, extras length, data type, vbucket (request) / status (response), body length,
#: opaque, CAS — all big-endian.
HEADER = struct.Struct(">BBHBBHIIQ")
HEADER_SIZE = HEADER.size  # 24

REQUEST_MAGIC = 0x80
RESPONSE_MAGIC = 0x81

OP_NOOP = 0x0A
OP_SASL_AUTH = 0x21
OP_TAP_CONNECT = 0x40
OP_TAP_MUTATION = 0x41
OP_TAP_DELETE = 0x42
OP_TAP_FLUSH = 0x43
OP_TAP_OPAQUE = 0x44
OP_TAP_VBUCKET_SET = 0x45
OP_TAP_CHECKPOINT_START = 0x46
OP_TAP_CHECKPOINT_END = 0x47

#: The ``opcode`` column's names; any other opcode is shown as its decimal number.
OPCODE_NAMES: dict[int, str] = {
    OP_NOOP: "NOOP",
    OP_TAP_CONNECT: "CONNECT",
    OP_TAP_MUTATION: "MUTATION",
    OP_TAP_DELETE: "DELETE",
    OP_TAP_FLUSH: "FLUSH",
    OP_TAP_OPAQUE: "OPAQUE",
    OP_TAP_VBUCKET_SET: "VBUCKET_SET",
    OP_TAP_CHECKPOINT_START: "CHECKPOINT_START",
    OP_TAP_CHECKPOINT_END: "CHECKPOINT_END",
}

#: Extras length each TAP opcode is sent with (checkpoint items travel through the mutation path).
TAP_EXTRAS: dict[int, int] = {
    OP_TAP_MUTATION: 16,
    OP_TAP_CHECKPOINT_START: 16,
    OP_TAP_CHECKPOINT_END: 16,
    OP_TAP_DELETE: 8,
    OP_TAP_FLUSH: 8,
    OP_TAP_OPAQUE: 8,
    OP_TAP_VBUCKET_SET: 8,
}

STATUS_NAMES: dict[int, str] = {
    0x00: "SUCCESS",
    0x01: "KEY_ENOENT",
    0x04: "EINVAL",
    0x07: "NOT_MY_VBUCKET",
    0x20: "AUTH_ERROR",
    0x81: "UNKNOWN_COMMAND",
    0x82: "ENOMEM",
    0x83: "NOT_SUPPORTED",
    0x84: "EINTERNAL",
    0x85: "EBUSY",
    0x86: "ETMPFAIL",
}

#: The largest body we accept by default: Couchbase items are at most 20 MiB, memcached's 1 MiB by default.
DEFAULT_MAX_BODY = 32 << 20


def opcode_name(opcode: int) -> str:
    return OPCODE_NAMES.get(opcode, str(opcode))


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, f"0x{status:02x}")


@dataclass(frozen=True, slots=True)
class Header:
    """One decoded 24-byte header; ``vbucket`` holds the status in a response."""

    magic: int
    opcode: int
    keylen: int
    extlen: int
    datatype: int
    vbucket: int
    bodylen: int
    opaque: int
    cas: int

    @property
    def size(self) -> int:
        return HEADER_SIZE + self.bodylen

    @property
    def status(self) -> int:
        return self.vbucket


def header_problem(h: Header, max_body: int) -> str | None:
    """Why ``h`` cannot be the header of a packet we read, or None when it is plausible."""
    if h.magic not in (REQUEST_MAGIC, RESPONSE_MAGIC):
        return f"bad magic 0x{h.magic:02x} (expected 0x80 or 0x81)"
    if h.bodylen > max_body:
        return f"body length {h.bodylen} is over the limit of {max_body} bytes"
    if h.extlen + h.keylen > h.bodylen:
        return f"extras ({h.extlen}) + key ({h.keylen}) exceed the body length {h.bodylen}"
    if h.magic == REQUEST_MAGIC:
        want = TAP_EXTRAS.get(h.opcode)
        if want is not None and h.extlen != want:
            return f"{opcode_name(h.opcode)} with {h.extlen} extras bytes (expected {want})"
    return None


_LENGTHS = struct.Struct(">BBHB3xI")  # magic, opcode, keylen, extlen, bodylen: what framing needs


def frame(buf: bytes | bytearray | memoryview, pos: int, stop: int, max_body: int
          ) -> tuple[list[int], int, str | None]:
    """Packet starts in ``buf[pos:stop]``: ``(starts, end of the last whole packet, problem)``.

    Scanning stops at a packet that is not complete yet, or at a header :func:`header_problem` rejects; then
    ``problem`` names the reason and the returned end is that header's position. Runs in the C kernel when it is
    built; in Python, long runs of ordinary TAP packets are framed with numpy (:func:`_frame_vector`), anything
    else one packet at a time. All three accept exactly the same packets.
    """
    if _KERNEL is not None:
        packed, end, bad = _KERNEL.frame(buf, pos, stop, max_body)
        problem = header_problem(read_header(buf, end), max_body) if bad else None
        return np.frombuffer(packed, np.int64).tolist(), end, problem
    return frame_python(buf, pos, stop, max_body)


def frame_starts(buf: bytes | bytearray | memoryview, pos: int, stop: int, max_body: int
                 ) -> tuple[np.ndarray, int, str | None]:
    """:func:`frame` with the packet starts as an int64 array (what the bulk decoder takes), not a list."""
    if _KERNEL is not None:
        packed, end, bad = _KERNEL.frame(buf, pos, stop, max_body)
        problem = header_problem(read_header(buf, end), max_body) if bad else None
        return np.frombuffer(packed, np.int64), end, problem
    found, end, problem = frame_python(buf, pos, stop, max_body)
    return np.asarray(found, np.int64), end, problem


def frame_python(buf: bytes | bytearray | memoryview, pos: int, stop: int, max_body: int
                 ) -> tuple[list[int], int, str | None]:
    """:func:`frame` without the C kernel."""
    starts: list[int] = []
    while True:
        if stop - pos >= _VECTOR_MIN_BYTES:
            found, pos = _frame_vector(buf, pos, stop, max_body)
            starts += found
            if len(found) >= _VECTOR_MIN_PACKETS:
                continue
        found, pos, problem, more = _frame_loop(buf, pos, stop, max_body, _LOOP_PACKETS)
        starts += found
        if not more:
            return starts, pos, problem


_VECTOR_MIN_BYTES = 64 * HEADER_SIZE
_VECTOR_MIN_PACKETS = 64
_LOOP_PACKETS = 1024


def _frame_loop(buf: bytes | bytearray | memoryview, pos: int, stop: int, max_body: int, limit: int
                ) -> tuple[list[int], int, str | None, bool]:
    """Up to ``limit`` packets one at a time: ``(starts, end, problem, stopped only by the limit)``."""
    starts: list[int] = []
    unpack = _LENGTHS.unpack_from
    tap_extras = TAP_EXTRAS
    append = starts.append
    while stop - pos >= HEADER_SIZE:
        if len(starts) >= limit:
            return starts, pos, None, True
        magic, opcode, keylen, extlen, bodylen = unpack(buf, pos)
        if (magic != REQUEST_MAGIC and magic != RESPONSE_MAGIC) or bodylen > max_body \
                or extlen + keylen > bodylen or (magic == REQUEST_MAGIC and tap_extras.get(opcode, extlen) != extlen):
            return starts, pos, header_problem(read_header(buf, pos), max_body), False
        end = pos + HEADER_SIZE + bodylen
        if end > stop:
            break
        append(pos)
        pos = end
    return starts, pos, None, False


_EXTRAS_BY_OPCODE = np.full(256, -1, np.int16)
_EXTRAS_BY_OPCODE[OP_NOOP] = 0
for _op, _ext in TAP_EXTRAS.items():
    _EXTRAS_BY_OPCODE[_op] = _ext


def _frame_vector(buf: bytes | bytearray | memoryview, pos: int, stop: int, max_body: int) -> tuple[list[int], int]:
    """The packets from ``pos`` on that chain through ordinary request headers (NOOP and TAP opcodes), found with
    numpy: every position that looks like such a header is a candidate; a candidate is a packet when the one
    before it ends exactly there, starting from ``pos``. Stops at the first break in that chain (something the
    one-at-a-time loop decides) and returns ``(starts, position after the last packet taken)``."""
    a = np.frombuffer(buf, np.uint8, stop - pos, pos)
    cand = np.flatnonzero(a[: len(a) - HEADER_SIZE + 1] == REQUEST_MAGIC)
    if not len(cand) or cand[0] != 0:
        return [], pos
    ext = a[cand + 4]
    cand = cand[_EXTRAS_BY_OPCODE[a[cand + 1]] == ext]
    if not len(cand) or cand[0] != 0:
        return [], pos
    c = cand.astype(np.int64)
    body = (a[c + 8].astype(np.int64) << 24) | (a[c + 9].astype(np.int64) << 16) \
        | (a[c + 10].astype(np.int64) << 8) | a[c + 11]
    keylen = (a[c + 2].astype(np.int64) << 8) | a[c + 3]
    good = (body <= max_body) & (a[c + 4] + keylen <= body)
    nxt = c + HEADER_SIZE + body
    # a candidate inside a value (bytes that only look like a header) is almost never where another one ends
    target = np.zeros(len(c), bool)
    at = np.searchsorted(c, nxt)
    inside = at < len(c)
    at = at[inside]
    target[at[c[at] == nxt[inside]]] = True
    target[0] = True
    if not target.all():
        c, good, nxt = c[target], good[target], nxt[target]
    # packet i is taken when all before it chain to it, it is sane, and it ends inside the buffer
    chained = np.ones(len(c), bool)
    chained[1:] = nxt[:-1] == c[1:]
    ok = chained & good & (nxt <= len(a))
    take = len(ok) if ok.all() else int(np.argmin(ok))
    if take == 0:
        return [], pos
    out = (c[:take] + pos).tolist()
    return out, pos + int(nxt[take - 1])


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> Header:
    return Header(*HEADER.unpack_from(buf, pos))


class PacketBuffer:
    """Push buffer for a byte stream (socket reads, file chunks): ``feed`` bytes, take whole packets out.

    Offsets are absolute positions in the stream (``base`` + bytes consumed). A header that cannot be right
    raises :class:`DecodeError` at its offset before its body is awaited, so a huge claimed length never makes
    the buffer grow past ``max_body`` + one read.
    """

    def __init__(self, max_body: int = DEFAULT_MAX_BODY, base: int = 0) -> None:
        self.max_body = max_body
        self._buf = bytearray()
        self._pos = 0  # start of unconsumed bytes in _buf
        self._base = base  # stream offset of _buf[0]
        self._lent = False  # take_all handed out a view of _buf: it is never changed again, only replaced

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._lent:
            self._renew(len(data))
            self._buf += data
            return
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0
        self._buf += data

    def feed_from(self, readinto: Callable[[memoryview], int | None], n: int) -> int:
        """Read up to ``n`` bytes with ``readinto`` (a file's) straight into the buffer; returns how many came."""
        rest = self._renew(n)
        with memoryview(self._buf) as view:
            got = readinto(view[rest:]) or 0
        del self._buf[rest + got:]
        return got

    def _renew(self, room: int) -> int:
        """Move the unconsumed bytes to a new buffer with ``room`` bytes after them; returns their length."""
        rest = len(self._buf) - self._pos
        new = bytearray(rest + room)
        new[:rest] = memoryview(self._buf)[self._pos:]
        self._base += self._pos
        self._buf, self._pos, self._lent = new, 0, False
        return rest

    @property
    def offset(self) -> int:
        """Stream offset of the next unconsumed byte."""
        return self._base + self._pos

    @property
    def pending(self) -> int:
        """Bytes fed but not taken out as packets."""
        return len(self._buf) - self._pos

    def next_packet(self) -> tuple[int, Header, bytes] | None:
        """``(offset, header, whole packet bytes)`` of the next complete packet, or None until more is fed."""
        pos = self._pos
        if len(self._buf) - pos < HEADER_SIZE:
            return None
        h = read_header(self._buf, pos)
        problem = header_problem(h, self.max_body)
        if problem is not None:
            raise DecodeError(self._base + pos, problem)
        end = pos + HEADER_SIZE + h.bodylen
        if end > len(self._buf):
            return None
        self._pos = end
        return self._base + pos, h, bytes(self._buf[pos:end])

    def take_all(self, copy: bool = True) -> tuple[int, bytes | memoryview, np.ndarray, str | None]:
        """Every complete packet at once, for bulk decoding: ``(offset of data, data, packet starts, problem)``.

        ``starts`` is an int64 array of positions in ``data``. Stops at the first incomplete packet, or at a header
        that cannot be right: then ``problem`` says why and the bad header is the next unconsumed byte
        (:attr:`offset`); the packets before it are returned. With ``copy=False`` ``data`` is a view of the
        buffer, which stays as it is (the next :meth:`feed` moves on to a new one).
        """
        first = self._pos
        starts, pos, problem = frame_starts(self._buf, first, len(self._buf), self.max_body)
        starts = starts - first
        offset = self._base + first
        if copy:
            with memoryview(self._buf) as view:
                data: bytes | memoryview = bytes(view[first:pos])  # one copy (a bytearray slice would make two)
        else:
            data = memoryview(self._buf)[first:pos]
            self._lent = True
        self._pos = pos
        return offset, data, starts, problem

    def rest(self) -> bytes:
        """The unconsumed bytes (a trailing partial packet at end of stream)."""
        return bytes(self._buf[self._pos:])

    def replace(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Hold just ``data``, the stream's bytes from ``offset`` on (a reader that framed the bytes before it
        itself, in a buffer of its own)."""
        self._buf = bytearray(data)
        self._pos = 0
        self._base = offset
        self._lent = False

    def skip(self, n: int) -> None:
        """Drop ``n`` unconsumed bytes (resynchronising after a bad header)."""
        self._pos = min(len(self._buf), self._pos + n)


def encode_packet(magic: int, opcode: int, *, key: bytes = b"", extras: bytes = b"", value: bytes = b"",
                  vbucket_or_status: int = 0, opaque: int = 0, cas: int = 0, datatype: int = 0) -> bytes:
    body = extras + key + value
    return HEADER.pack(magic, opcode, len(key), len(extras), datatype, vbucket_or_status, len(body), opaque,
                       cas) + body


def encode_ack(opcode: int, opaque: int, status: int = 0) -> bytes:
    """The consumer's answer to an ACK-flagged TAP packet: a bare response with the packet's opcode and opaque."""
    return HEADER.pack(RESPONSE_MAGIC, opcode, 0, 0, 0, status, 0, opaque, 0)
