"""IPROTO packets: framing the bytes a Tarantool server sends, decoding a packet's header and body, and what an
error reply means (``docs/formats/tarantool-replication.md``).

Every packet length is checked against :data:`MAX_PACKET_BYTES` before bytes are buffered for it. Data rows of
the usual shape leave the buffer as bytes, without being decoded here (:meth:`PacketBuffer.take_rows`, with a C
twin in ``_frames.c``); replies, errors and heartbeats are decoded by :func:`decode_packet`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from spark_logsource.errors import AuthenticationError, SourceError, UnavailableError
from spark_logsource.native import load_kernel
from spark_logsource.tarantool.decode.mpext import ext_hook
from spark_logsource.tarantool.iproto import ERROR_FLAG, K_ERROR, K_ERROR_24, K_SYNC, K_TYPE, K_VCLOCK
from spark_logsource.tarantool.position import vclock_text

__all__ = ["MAX_PACKET_BYTES", "ConnectionLost", "Packet", "PacketBuffer", "ServerError", "ServerStarting",
           "XlogGapError", "decode_packet", "error_of", "int_vclock", "packet_type", "snapshot_row",
           "without_sync"]

#: The C twin of PacketBuffer.take_rows_py (``_frames.c``), or None (pure Python; see spark_logsource.native).
_frames = load_kernel("spark_logsource.tarantool._frames")

#: Largest packet we buffer (a packet is one row: a tuple is at most memtx_max_tuple_size, 1 MiB by default).
MAX_PACKET_BYTES = 256 << 20

# Error codes we tell apart (``src/box/errcode.h``).
ER_ACCESS_DENIED = 42
ER_NO_SUCH_USER = 45
ER_PASSWORD_MISMATCH = 47
ER_XLOG_GAP = 32
ER_LOADING = 116  # "Instance bootstrap hasn't finished yet": the server is recovering after a (re)start
_AUTH_CODES = frozenset({ER_ACCESS_DENIED, ER_NO_SUCH_USER, ER_PASSWORD_MISMATCH})

#: 0xce, uint32 length, then the first bytes of a row header {0: type, 1: sync, ...} (see PacketBuffer.take_rows).
_ROW_PREFIX = struct.Struct(">BIBBBBB")
# msgpack length prefixes: first byte → total prefix size (the server always writes 0xce + 4 bytes).
_UINT_PREFIX = {0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9}


class ConnectionLost(UnavailableError):
    """The TCP connection broke, was refused, or the server closed it: worth reconnecting."""


class ServerError(SourceError):
    """The server answered with an error packet (``code`` is Tarantool's error code)."""

    def __init__(self, source: str, position: str | None, code: int, message: str) -> None:
        super().__init__(source, position, f"server error {code}: {message}")
        self.code = code
        self.message = message


class XlogGapError(ServerError):
    """The server no longer has the xlogs a SUBSCRIBE needs (its ``XlogGapError``)."""


def stall_error(source: str, position: str, received: dict[int, int], pending: Iterable[int],
                end: dict[int, int], timeout: float, gc_vclock: dict[int, int]) -> SourceError:
    """The error for a subscription that sends only heartbeats while rows up to ``end`` are due.

    Tarantool 2.6 answers a SUBSCRIBE from a vclock older than its oldest checkpoint (``gc_vclock``: the xlogs
    before it were collected) without an error and sends nothing of the rows it lost: that is an
    :class:`XlogGapError` of the rows from ``received`` to ``gc_vclock``, which ``failOnDataLoss`` decides on."""
    if any(received.get(r, 0) < gc_vclock.get(r, 0) for r in pending):
        return XlogGapError(source, position, ER_XLOG_GAP, f"Missing .xlog file between LSN {sum(received.values())} "
                                                 f"{vclock_text(received)} and {sum(gc_vclock.values())} "
                                                 f"{vclock_text(gc_vclock)} (collected by a checkpoint)")
    return SourceError(source, position, f"only heartbeats for {timeout:g} s while rows up to vclock "
                                         f"{vclock_text(end)} were expected (did the server lose data?)")


@dataclass(slots=True)
class Packet:
    """One decoded IPROTO packet (responses, errors, heartbeats; data rows stay as bytes elsewhere)."""

    type: int
    header: dict[int, Any]
    body: dict[int, Any] | None = field(default=None)


class PacketBuffer:
    """Push-style framer: :meth:`feed` bytes as they arrive, take complete packets out with :meth:`next`.

    A packet is a msgpack uint length then that many bytes (header map + optional body map). The length is
    checked against ``max_packet`` before any byte is kept for it.
    """

    __slots__ = ("_buf", "_pos", "max_packet", "source")

    def __init__(self, source: str, max_packet: int = MAX_PACKET_BYTES) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_packet = max_packet
        self.source = source

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif self._pos > (1 << 20):
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def next(self) -> bytes | None:
        """The next complete packet's bytes (without the length prefix), or None if more bytes are needed."""
        buf, pos = self._buf, self._pos
        avail = len(buf) - pos
        if avail < 1:
            return None
        first = buf[pos]
        if first == 0xCE:
            if avail < 5:
                return None
            size = int.from_bytes(buf[pos + 1 : pos + 5], "big")
            start = pos + 5
        elif first < 0x80:
            size, start = first, pos + 1
        else:
            prefix = _UINT_PREFIX.get(first)
            if prefix is None:
                raise SourceError(self.source, None, f"protocol error: packet length starts with byte 0x{first:02x}, "
                                                     "not a msgpack unsigned integer")
            if avail < prefix:
                return None
            size, start = int.from_bytes(buf[pos + 1 : pos + prefix], "big"), pos + prefix
        if size > self.max_packet:
            raise SourceError(self.source, None, f"protocol error: packet of {size} bytes announced, more than "
                                                 f"the {self.max_packet}-byte limit")
        if size == 0:
            raise SourceError(self.source, None, "protocol error: empty packet")
        end = start + size
        if end > len(buf):
            return None
        self._pos = end
        return bytes(buf[start:end])

    def take_rows(self, out: bytearray, bounds: list[int], limit: int) -> bool:
        """Move up to ``limit`` complete data rows of the usual shape into ``out`` (the hot path of streaming).

        The usual shape is a packet ``0xce`` + 4-byte length whose header map starts ``{0: type, 1: sync, ...}``
        with a small type that is neither OK nor an error, and a small sync: the row is appended to ``out``
        without its SYNC entry (rows then read like the rows of a file), and the end of the row in ``out`` to
        ``bounds``. Stops at the first packet of another shape (heartbeat, error, unusual header: take it with
        :meth:`next`) and returns True in that case; False when more bytes are needed or ``limit`` was reached.
        Runs the C twin (``_frames.c``) when it is built, else :meth:`take_rows_py`.
        """
        if _frames is None:
            return self.take_rows_py(out, bounds, limit)
        self._pos, stopped_at_other = _frames.take_rows(self._buf, self._pos, limit, self.max_packet, out, bounds)
        return bool(stopped_at_other)

    def take_rows_py(self, out: bytearray, bounds: list[int], limit: int) -> bool:
        """Pure-Python reference of :meth:`take_rows`."""
        buf, pos = self._buf, self._pos
        n = len(buf)
        unpack = _ROW_PREFIX.unpack_from
        max_packet = self.max_packet
        taken = 0
        stopped_at_other = False
        with memoryview(buf) as mv:
            while taken < limit and pos + 10 <= n:
                marker, size, b0, k0, rtype, k1, sync = unpack(buf, pos)
                if (marker != 0xCE or k0 != 0 or k1 != 1 or not 0x82 <= b0 <= 0x8F or not 0 < rtype < 0x80
                        or sync >= 0x80 or not 5 <= size <= max_packet):
                    stopped_at_other = True
                    break
                end = pos + 5 + size
                if end > n:
                    break
                out.append(b0 - 1)
                out.append(0)
                out.append(rtype)
                out += mv[pos + 10 : end]
                bounds.append(len(out))
                pos = end
                taken += 1
        self._pos = pos
        return stopped_at_other


def decode_packet(data: bytes, source: str) -> Packet:
    """Header and optional body of one packet; raises SourceError on anything that is not two maps."""
    try:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=ext_hook,
                                    unicode_errors="surrogateescape", max_buffer_size=len(data) + 1)
        unpacker.feed(data)
        header = unpacker.unpack()
        body = unpacker.unpack() if unpacker.tell() < len(data) else None
    except Exception as exc:  # msgpack raises many types for bad bytes
        raise SourceError(source, None, f"protocol error: undecodable packet ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or not isinstance(header.get(K_TYPE, 0), int):
        raise SourceError(source, None, "protocol error: packet header is not a map with an integer type")
    if body is not None and not isinstance(body, dict):
        raise SourceError(source, None, "protocol error: packet body is not a map")
    return Packet(header.get(K_TYPE, 0), header, body)


def error_of(packet: Packet, source: str, position: str | None) -> ServerError:
    """The exception for an error packet (type ``0x8000 | code``)."""
    code = packet.type & ~ERROR_FLAG
    body = packet.body or {}
    message = body.get(K_ERROR_24)
    if not isinstance(message, str):
        stack: Any = body.get(K_ERROR)  # msgpack data of any shape: a wrong one is a TypeError below
        try:
            message = stack[0][0][3]  # {0: [ {3: message, ...} ]}
        except (KeyError, IndexError, TypeError):
            message = "(no message)"
    message = str(message)
    if code == ER_XLOG_GAP or message.startswith("Missing .xlog"):
        return XlogGapError(source, position, code, message)
    if code in _AUTH_CODES:
        return _AuthServerError(source, position, code, message)
    if code == ER_LOADING:
        return ServerStarting(source, position, code, message)
    return ServerError(source, position, code, message)


class ServerStarting(ConnectionLost, ServerError):
    """The server is still loading its data after a start: worth retrying like a lost connection."""

    def __init__(self, source: str, position: str | None, code: int, message: str) -> None:
        ServerError.__init__(self, source, position, code, message)


class _AuthServerError(AuthenticationError, ServerError):
    """An error packet that means: wrong user, wrong password or missing privilege."""

    def __init__(self, source: str, position: str | None, code: int, message: str) -> None:
        ServerError.__init__(self, source, position, code, message)


def int_vclock(value: Any, source: str, what: str) -> dict[int, int]:
    """A vclock map from the wire, checked: uint keys < 32, uint values."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SourceError(source, None, f"protocol error: {what} is not a map")
    out = {}
    for k, v in value.items():
        if type(k) is not int or not 0 <= k < 32 or type(v) is not int or v < 0:
            raise SourceError(source, None, f"protocol error: {what} has entry {k!r}: {v!r}")
        out[k] = v
    return out


def packet_type(data: bytes) -> int | None:
    """The request type of a packet from its first bytes, when the header starts with key 0 (the usual case)."""
    if len(data) < 3 or not 0x81 <= data[0] <= 0x8F or data[1] != 0x00:
        return None
    b = data[2]
    if b < 0x80:
        return b
    if b == 0xCC and len(data) >= 4:
        return data[3]
    if b == 0xCD and len(data) >= 5:
        return (data[3] << 8) | data[4]
    if b == 0xCE and len(data) >= 7:
        return int.from_bytes(data[3:7], "big")
    return None


def _split_header(p: bytes, source: str) -> tuple[dict[int, Any], bytes]:
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(p) + 1)
    unpacker.feed(p)
    try:
        header = unpacker.unpack()
    except Exception as exc:
        raise SourceError(source, None, f"protocol error: undecodable row header ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise SourceError(source, None, "protocol error: row header is not a map")
    return header, p[unpacker.tell():]


def without_sync(p: bytes, source: str) -> bytes:
    """A row packet re-encoded without its SYNC header entry (slow path for unusual header layouts)."""
    header, rest = _split_header(p, source)
    header.pop(K_SYNC, None)
    packed: bytes = msgpack.packb(header)
    return packed + rest


def snapshot_row(p: bytes, tag: bytes, source: str) -> bytes:
    """A FETCH_SNAPSHOT row with SYNC removed and the read view's vclock (``tag``) added to its header."""
    if len(p) > 4 and p[0] == 0x82 and p[1] == 0x00 and p[2] < 0x80 and p[3] == 0x01:
        v = p[4]
        size = 1 if v < 0x80 else _UINT_PREFIX.get(v, 0)
        if size:
            return b"\x82\x00" + p[2:3] + tag + p[4 + size:]
    header, rest = _split_header(p, source)
    header.pop(K_SYNC, None)
    header[K_VCLOCK] = msgpack.unpackb(tag[1:], strict_map_key=False)
    packed: bytes = msgpack.packb(header)
    return packed + rest
