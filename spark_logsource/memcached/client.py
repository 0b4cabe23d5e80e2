"""A TAP consumer: connect, send TAP_CONNECT, read the server's packets, answer the ACKs it asks for.

Wire facts (flag bits, the order of the TAP_CONNECT userdata, ACK replies) are in ``docs/formats/memcached-tap.md``.
The socket is read in large chunks into a :class:`~spark_logsource.memcached.protocol.PacketBuffer`; whole
packets come out in bulk for :func:`~spark_logsource.memcached.tap.decode_bulk`. Every wait is bounded by the
read timeout, and every length by ``max_body``: a dead, silent or lying server ends in a :class:`SourceError`
naming ``tap://host:port`` (never the password) and the stream byte where it happened.
"""

from __future__ import annotations

import logging
import queue
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import numpy as np

from spark_logsource.errors import AuthenticationError, OptionError, SourceError
from spark_logsource.memcached.protocol import (
    DEFAULT_MAX_BODY,
    HEADER_SIZE,
    OP_NOOP,
    OP_SASL_AUTH,
    OP_TAP_CHECKPOINT_END,
    OP_TAP_CONNECT,
    OP_TAP_MUTATION,
    REQUEST_MAGIC,
    RESPONSE_MAGIC,
    PacketBuffer,
    encode_ack,
    encode_packet,
    read_header,
    status_name,
)
from spark_logsource.memcached.tap import TAP_FLAG_ACK
from spark_logsource.native import load_kernel

log = logging.getLogger(__name__)

_KERNEL = load_kernel("spark_logsource.memcached._kernel")

# TAP_CONNECT flags; the userdata of the flags that have one follows in increasing bit order.
BACKFILL = 0x01
DUMP = 0x02
LIST_VBUCKETS = 0x04
TAKEOVER_VBUCKETS = 0x08
SUPPORT_ACK = 0x10
REQUEST_KEYS_ONLY = 0x20
CHECKPOINT = 0x40
REGISTERED_CLIENT = 0x80

#: The backfill age meaning "only changes from now on" (any time in the future does).
BACKFILL_NOW = 0xFFFFFFFFFFFFFFFF
CONNECT_OPAQUE = 0xFEED0001
RECV_SIZE = 1 << 20


@dataclass(frozen=True)
class TapEndpoint:
    """``tap://[user[:password]@]host[:port]``; :attr:`source` is what rows, logs and errors show."""

    host: str
    port: int
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def source(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tap://{host}:{self.port}"

    def __repr__(self) -> str:  # never the credentials
        return f"TapEndpoint({self.source!r})"


def parse_tap_uri(uri: str) -> TapEndpoint:
    try:
        parts = urlsplit(uri.strip())
        port = parts.port or 11211
    except ValueError as exc:
        raise OptionError("uri", f"not a tap://host:port URI ({exc})") from None
    if parts.scheme.lower() != "tap" or not parts.hostname:
        shown = uri.split("@", 1)[-1] if "@" in uri else uri
        raise OptionError("uri", f"expected tap://host:port, got {shown!r}")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return TapEndpoint(parts.hostname, port, user, password)


@dataclass(frozen=True, slots=True)
class ConnectSpec:
    """What one TAP_CONNECT asks for."""

    name: bytes = b""
    dump: bool = False
    backfill_age: int | None = None  # None: no BACKFILL flag
    vbuckets: tuple[int, ...] | None = None
    takeover: bool = False
    support_ack: bool = True
    keys_only: bool = False
    checkpoint: bool = False
    registered: bool = False

    @property
    def flags(self) -> int:
        flags = 0
        if self.backfill_age is not None:
            flags |= BACKFILL
        if self.dump:
            flags |= DUMP
        if self.vbuckets is not None:
            flags |= LIST_VBUCKETS
        if self.takeover:
            flags |= TAKEOVER_VBUCKETS
        if self.support_ack:
            flags |= SUPPORT_ACK
        if self.keys_only:
            flags |= REQUEST_KEYS_ONLY
        if self.checkpoint:
            flags |= CHECKPOINT
        if self.registered:
            flags |= REGISTERED_CLIENT
        return flags

    def userdata(self) -> bytes:
        out = b""
        if self.backfill_age is not None:
            out += struct.pack(">Q", self.backfill_age)
        if self.vbuckets is not None:
            out += struct.pack(f">H{len(self.vbuckets)}H", len(self.vbuckets), *self.vbuckets)
        if self.checkpoint:
            out += struct.pack(">H", 0)  # no per-vbucket checkpoint ids: the server starts where it keeps us
        if self.registered:
            out += b"\x00"  # not "closed checkpoints only"
        return out

    def encode(self, opaque: int = CONNECT_OPAQUE) -> bytes:
        return encode_packet(REQUEST_MAGIC, OP_TAP_CONNECT, key=self.name, extras=struct.pack(">I", self.flags),
                             value=self.userdata(), opaque=opaque)


@dataclass(slots=True)
class Chunk:
    """Whole packets read at once: ``data`` holds them back to back, ``starts`` where each begins."""

    offset: int  # stream offset of data[0] (bytes received before it on this connection)
    data: bytes
    starts: Sequence[int]  # an int64 array


def ack_requests(data: bytes, starts: Sequence[int]) -> list[tuple[int, int]]:
    """``(opcode, opaque)`` of the TAP packets in ``data`` that carry the ACK flag, in order."""
    if not len(starts):
        return []
    if _KERNEL is not None:
        packed, _ = _KERNEL.acks(data, np.asarray(starts, np.int64).tobytes())
        return [(v >> 32, v & 0xFFFFFFFF) for v in np.frombuffer(packed, np.int64).tolist()]
    return ack_requests_numpy(data, starts)


def ack_requests_numpy(data: bytes, starts: Sequence[int]) -> list[tuple[int, int]]:
    """:func:`ack_requests` without the C kernel."""
    if not len(starts):
        return []
    a = np.frombuffer(data, np.uint8)
    o = np.asarray(starts, np.int64)
    opcode = a[o + 1]
    tap = (a[o] == REQUEST_MAGIC) & (opcode >= OP_TAP_MUTATION) & (opcode <= OP_TAP_CHECKPOINT_END) & (a[o + 4] >= 8)
    at = np.where(tap, o + HEADER_SIZE + 3, o)  # low byte of the big-endian TAP flags
    wanted = np.flatnonzero(tap & ((a[at] & TAP_FLAG_ACK) != 0))
    return [(int(opcode[i]), int.from_bytes(data[int(o[i]) + 12:int(o[i]) + 16], "big")) for i in wanted]


class TapConnection:
    """One TCP connection speaking TAP as a consumer. Not thread-safe; close it (or use ``with``)."""

    def __init__(self, endpoint: TapEndpoint, spec: ConnectSpec, *, connect_timeout: float = 10.0,
                 read_timeout: float = 60.0, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.endpoint = endpoint
        self.spec = spec
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._buf = PacketBuffer(max_body)
        self._rbuf = bytearray(RECV_SIZE)  # reused for every recv: no fresh allocation per read
        self._sock: socket.socket | None = None
        self._first = True
        self.closed_by_server = False
        self.acks_sent: list[tuple[int, int]] = []

    # --- lifecycle -------------------------------------------------------------------------------------------------
    def __enter__(self) -> TapConnection:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, reason: str, cls: type[SourceError] = SourceError, at: int | None = None) -> SourceError:
        """An error about this connection, placed at stream byte ``at`` (default: the next unread byte)."""
        return cls(self.endpoint.source, f"stream byte {self._buf.offset if at is None else at}", reason)

    def open(self) -> None:
        ep = self.endpoint
        try:
            sock = socket.create_connection((ep.host, ep.port), timeout=self.connect_timeout)
        except OSError as exc:
            raise SourceError(ep.source, None, f"cannot connect: {exc.strerror or exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        try:
            if ep.user is not None:
                self._authenticate()
            sock.sendall(self.spec.encode())
        except OSError as exc:
            self.close()
            raise SourceError(ep.source, None, f"cannot send TAP_CONNECT: {exc.strerror or exc}") from None
        except SourceError:
            self.close()
            raise
        log.info("%s: TAP_CONNECT flags=0x%x name=%r", ep.source, self.spec.flags, self.spec.name)

    def _authenticate(self) -> None:
        """SASL PLAIN (bucket name and password on Couchbase); the answer must be SUCCESS."""
        ep = self.endpoint
        token = b"\x00" + (ep.user or "").encode() + b"\x00" + (ep.password or "").encode()
        assert self._sock is not None
        self._sock.sendall(encode_packet(REQUEST_MAGIC, OP_SASL_AUTH, key=b"PLAIN", value=token))
        deadline = time.monotonic() + self.read_timeout
        while True:
            packet = self._buf.next_packet()
            if packet is not None:
                break
            if not self._recv(deadline - time.monotonic()):
                raise self.error("connection closed during authentication")
        _, h, _ = packet
        if h.magic != RESPONSE_MAGIC or h.opcode != OP_SASL_AUTH:
            raise self.error(f"unexpected answer to SASL_AUTH (magic 0x{h.magic:02x}, opcode 0x{h.opcode:02x})")
        if h.status != 0:
            raise self.error(f"authentication refused: {status_name(h.status)}", AuthenticationError)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    # --- reading -------------------------------------------------------------------------------------------------
    def _recv(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s (0: just look) for bytes and buffer them; False once the server closed."""
        sock = self._sock
        if sock is None:
            return False
        try:
            ready, _, _ = select.select([sock], [], [], max(timeout, 0.0))
            if not ready:
                return True
            n = sock.recv_into(self._rbuf)
        except OSError as exc:
            raise self.error(f"connection failed: {exc.strerror or exc}") from None
        if not n:
            self.closed_by_server = True
            self.close()
            return False
        with memoryview(self._rbuf) as view:
            self._buf.feed(view[:n])
        return True

    def read(self, wait: float) -> Chunk | None:
        """Whole packets that arrive within ``wait`` s (possibly none), or None once the server closed cleanly.

        Raises :class:`SourceError` when the server closes mid-packet, sends a header that cannot be right, or
        answers TAP_CONNECT with an error.
        """
        deadline = time.monotonic() + wait
        while True:
            offset, data, starts, problem = self._buf.take_all()
            if len(starts):
                self._check_first(offset, data, starts)
                return Chunk(offset, data, starts)
            if problem is not None:
                raise self.error(f"bad packet header at stream byte {self._buf.offset}: {problem}")
            if self._sock is None:
                if self._buf.pending:
                    raise self.error(f"connection closed inside a packet ({self._buf.pending} bytes of it received)")
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return Chunk(self._buf.offset, b"", np.zeros(0, np.int64))
            self._recv(left)
            # drain what else is already there, so one chunk holds many packets
            while self._sock is not None and self._buf.pending < RECV_SIZE * 8:
                before = self._buf.pending
                self._recv(0)
                if self._buf.pending == before:
                    break

    def _check_first(self, offset: int, data: bytes, starts: Sequence[int]) -> None:
        """The first packet of a connection may be the server's refusal of TAP_CONNECT."""
        if not self._first:
            return
        self._first = False
        first = int(starts[0])
        h = read_header(data, first)
        if h.magic == RESPONSE_MAGIC and h.status != 0:
            text = data[first + HEADER_SIZE + h.extlen + h.keylen:first + h.size].decode("utf-8", "replace")
            cls = AuthenticationError if h.status == 0x20 else SourceError
            self.close()
            raise self.error(f"server refused TAP_CONNECT (flags 0x{self.spec.flags:x}): status 0x{h.status:02x} "
                             f"{status_name(h.status)}: {text!r}", cls, at=offset + first)

    # --- acknowledging -------------------------------------------------------------------------------------------
    def send_acks(self, acks: list[tuple[int, int]]) -> None:
        if not acks or self._sock is None:
            return
        try:
            self._sock.sendall(b"".join(encode_ack(op, opaque) for op, opaque in acks))
        except OSError as exc:
            raise self.error(f"cannot send ACK: {exc.strerror or exc}") from None
        self.acks_sent.extend(acks)
        log.debug("%s: acked %d packets up to seq %d", self.endpoint.source, len(acks), acks[-1][1])


def dump_chunks(conn: TapConnection, prefetch: int = 4) -> Iterator[Chunk]:
    """The chunks of a one-shot stream (DUMP, TAKEOVER, a default engine's walk) until the server closes it.

    A reader thread keeps the socket drained while the caller decodes (at most ``prefetch`` chunks of at most
    ~8 MiB wait in between), and answers every ACK the server asks for as soon as its packet is read (nothing here
    waits on a sink), so the server never stalls on us. NOOP keep-alives do not count as progress: a server that
    sends only those for ``read_timeout`` seconds ends the read with a :class:`SourceError` instead of hanging it.
    """
    chunks: queue.Queue[Chunk | BaseException | None] = queue.Queue(maxsize=prefetch)
    stop = threading.Event()

    def put(item: Chunk | BaseException | None) -> None:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def reader() -> None:
        last_progress = time.monotonic()
        try:
            while not stop.is_set():
                left = conn.read_timeout - (time.monotonic() - last_progress)
                if left <= 0:
                    raise conn.error(f"read timeout: no data from the server for {conn.read_timeout:g} s")
                chunk = conn.read(min(left, 0.5))  # wakes up to notice ``stop``
                if chunk is None:
                    put(None)
                    return
                if not len(chunk.starts):
                    continue
                if not _only_noops(chunk):
                    last_progress = time.monotonic()
                conn.send_acks(ack_requests(chunk.data, chunk.starts))
                put(chunk)
        except BaseException as exc:  # handed to the caller's thread, raised there
            put(exc)

    thread = threading.Thread(target=reader, name=f"tap-reader {conn.endpoint.source}", daemon=True)
    thread.start()
    try:
        while True:
            item = chunks.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def _only_noops(chunk: Chunk) -> bool:
    if _KERNEL is not None:
        return _KERNEL.acks(chunk.data, np.asarray(chunk.starts, np.int64).tobytes())[1] == 0
    a = np.frombuffer(chunk.data, np.uint8)
    return bool(np.all(a[np.asarray(chunk.starts, np.int64) + 1] == OP_NOOP))
