"""A TAP consumer: connect, send TAP_CONNECT, read the server's packets, answer the ACKs it asks for.

Wire facts (flag bits, the order of the TAP_CONNECT userdata, ACK replies) are in ``docs/formats/memcached-tap.md``.
The socket is read in large chunks into a :class:`~spark_logsource.memcached.protocol.PacketBuffer` (or, for
one-shot streams, :func:`dump_chunks`, straight into reused buffers); whole packets come out in bulk for
:func:`~spark_logsource.memcached.tap.decode_bulk`. Every wait is bounded by the
read timeout, and every length by ``max_body``: a dead, silent or lying server ends in a :class:`SourceError`
naming ``tap://host:port`` (never the password) and the stream byte where it happened.
"""

from __future__ import annotations

import logging
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from spark_logsource.errors import AuthenticationError, SourceError
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
    frame_starts,
    read_header,
    status_name,
)
from spark_logsource.memcached.tap import TAP_FLAG_ACK
from spark_logsource.native import load_kernel
from spark_logsource.net import connect_tcp, os_reason, parse_server_uri

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
#: Size of each buffer a one-shot stream (:func:`dump_chunks`) is received into: the largest chunk it decodes.
DUMP_BUFFER = 2 << 20
#: How long the caller of :func:`dump_chunks` may be away before a keeper thread reads (and ACKs) for it.
KEEPER_DELAY = 0.05


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
    """``tap://[user[:password]@]host[:port]`` (port 11211 by default)."""
    parts = parse_server_uri(uri, schemes=("tap",), form="tap://host:port", default_port=11211)
    password = None if parts.password is None else parts.password.reveal()
    return TapEndpoint(parts.host, parts.port, parts.user, password)


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
    data: bytes | memoryview  # a view of a receive buffer from TapConnection.read_into
    starts: Sequence[int] | np.ndarray  # an int64 array


def ack_requests(data: bytes | memoryview, starts: Sequence[int] | np.ndarray) -> list[tuple[int, int]]:
    """``(opcode, opaque)`` of the TAP packets in ``data`` that carry the ACK flag, in order."""
    if not len(starts):
        return []
    if _KERNEL is not None:
        packed, _ = _KERNEL.acks(data, np.asarray(starts, np.int64).tobytes())
        return [(v >> 32, v & 0xFFFFFFFF) for v in np.frombuffer(packed, np.int64).tolist()]
    return ack_requests_numpy(data, starts)


def ack_requests_numpy(data: bytes | memoryview, starts: Sequence[int] | np.ndarray) -> list[tuple[int, int]]:
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
        sock = connect_tcp(ep.host, ep.port, ep.source, connect_timeout=self.connect_timeout)
        self._sock = sock
        try:
            if ep.user is not None:
                self._authenticate()
            sock.sendall(self.spec.encode())
        except OSError as exc:
            self.close()
            raise SourceError(ep.source, None, f"cannot send TAP_CONNECT: {os_reason(exc)}") from None
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
            raise self.error(f"connection failed: {os_reason(exc)}") from None
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

    def read_into(self, buf: bytearray, wait: float) -> Chunk | None:
        """:meth:`read` with two copies fewer, for one-shot streams: bytes are received straight into ``buf`` (after
        the partial packet the previous read left) and framed there; the chunk's ``data`` is a view of ``buf``,
        valid until the caller reuses ``buf``. Returns what arrived within ``wait`` s, as soon as the socket has
        nothing more or ``buf`` is full. A packet larger than half of ``buf``, a bad header and the end of the
        stream go through :meth:`read` (whose chunk holds its own bytes).
        """
        sock = self._sock
        pending = self._buf.pending
        if sock is None or pending > len(buf) // 2:
            return self.read(wait)
        offset = self._buf.offset
        view = memoryview(buf)
        view[:pending] = self._buf.rest()
        filled, closed = pending, False
        deadline = time.monotonic() + wait
        timeout = sock.gettimeout()
        sock.settimeout(0.0)  # one recv per call: the waits are the select below, not a poll before every recv
        try:
            while filled < len(buf):
                try:
                    n = sock.recv_into(view[filled:])
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if filled > pending or left <= 0 or not select.select([sock], [], [], left)[0]:
                        break
                    continue
                if not n:
                    closed = True
                    break
                filled += n
        except OSError as exc:
            raise self.error(f"connection failed: {os_reason(exc)}") from None
        finally:
            sock.settimeout(timeout)
        if closed:
            self.closed_by_server = True
            self.close()
        starts, end, _ = frame_starts(view, 0, filled, self._buf.max_body)
        self._buf.replace(offset + end, view[end:filled])  # a partial packet, or a bad header for read() to report
        if not len(starts):
            return self.read(0.0)
        self._check_first(offset, view, starts)
        return Chunk(offset, view[:end], starts)

    def _check_first(self, offset: int, data: bytes | memoryview, starts: Sequence[int] | np.ndarray) -> None:
        """The first packet of a connection may be the server's refusal of TAP_CONNECT."""
        if not self._first:
            return
        self._first = False
        first = int(starts[0])
        h = read_header(data, first)
        if h.magic == RESPONSE_MAGIC and h.status != 0:
            text = bytes(data[first + HEADER_SIZE + h.extlen + h.keylen:first + h.size]).decode("utf-8", "replace")
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
            raise self.error(f"cannot send ACK: {os_reason(exc)}") from None
        self.acks_sent.extend(acks)
        log.debug("%s: acked %d packets up to seq %d", self.endpoint.source, len(acks), acks[-1][1])


class _BufferCache:
    """Receive buffers kept between one-shot reads: a fresh buffer costs a page fault per 4 KiB on first touch
    (10–25 % of a DUMP's CPU time in benchmarks/ when every read made its own), so at most ``keep`` of them are
    kept for the next read of this process."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._free: list[bytearray] = []

    def get(self, size: int) -> bytearray:
        with self._lock:
            for i, buf in enumerate(self._free):
                if len(buf) == size:
                    return self._free.pop(i)
        return bytearray(size)

    def put(self, bufs: list[bytearray]) -> None:
        with self._lock:
            room = self.keep - len(self._free)
            self._free += bufs[:max(room, 0)]


_BUFFERS = _BufferCache(keep=6)


def dump_chunks(conn: TapConnection, prefetch: int = 4, buffer_size: int = DUMP_BUFFER) -> Iterator[Chunk]:
    """The chunks of a one-shot stream (DUMP, TAKEOVER, a default engine's walk) until the server closes it.

    The caller's thread reads the socket itself when it asks for the next chunk: no hand-over between threads per
    chunk, which on a busy machine costs more than the decoding. While the caller is away (working on the batches
    of the last chunk for more than :data:`KEEPER_DELAY` s), a keeper thread drains the socket into up to
    ``prefetch`` chunks of at most ``buffer_size`` bytes and answers every ACK the server asks for as soon as its
    packet is read (nothing here waits on a sink), so the server never stalls on us. NOOP keep-alives do not count
    as progress: a server that sends only those for ``read_timeout`` seconds ends the read with a
    :class:`SourceError` instead of hanging it.

    The socket is read straight into at most ``prefetch + 2`` reused buffers (:meth:`TapConnection.read_into`): a
    chunk's ``data`` is valid until the caller asks for the next chunk, when its buffer is received into again.
    The buffers are kept for the next read (:class:`_BufferCache`).
    """
    lock = threading.Lock()  # one reader of the connection at a time; guards everything below
    queued: deque[tuple[Chunk, bytearray | None]] = deque()  # read by the keeper while the caller was away
    free: list[bytearray] = []
    made: list[bytearray] = []
    failure: list[BaseException] = []  # the keeper's error, raised in the caller's thread after its chunks
    ended = False  # the server closed the stream cleanly
    away_since: float | None = None
    last_progress = time.monotonic()
    stop = threading.Event()

    def read_one(wait: float) -> tuple[Chunk, bytearray | None] | None:
        """The next chunk with packets (or None: nothing within ``wait``, no free buffer, or the end); lock held."""
        nonlocal ended, last_progress
        if free:
            buf = free.pop()
        elif len(made) < prefetch + 2:  # at most prefetch queued + one with the caller + one being filled
            buf = _BUFFERS.get(buffer_size)
            made.append(buf)
        else:
            return None
        left = conn.read_timeout - (time.monotonic() - last_progress)
        if left <= 0:
            free.append(buf)
            raise conn.error(f"read timeout: no data from the server for {conn.read_timeout:g} s")
        try:
            chunk = conn.read_into(buf, min(left, wait))
        except BaseException:
            free.append(buf)
            raise
        held = buf if chunk is not None and isinstance(chunk.data, memoryview) else None  # else read()'s bytes
        if held is None:
            free.append(buf)
        if chunk is None:
            ended = True
            return None
        if not len(chunk.starts):
            if held is not None:
                free.append(buf)
            return None
        acks, progress = _acks_and_progress(chunk)
        if progress:
            last_progress = time.monotonic()
        if acks:
            conn.send_acks(acks)
        return chunk, held

    def keeper() -> None:
        nonlocal last_progress
        while not stop.wait(KEEPER_DELAY):
            since = away_since
            if since is None or time.monotonic() - since < KEEPER_DELAY or not lock.acquire(blocking=False):
                continue
            try:
                while away_since is not None and not ended and not failure and len(queued) < prefetch:
                    item = read_one(0.0)
                    if item is None:
                        break
                    queued.append(item)
                if len(queued) >= prefetch:  # not listening until the caller is back: the server is not silent
                    last_progress = time.monotonic()
            except BaseException as exc:  # raised in the caller's thread, after the chunks read before it
                failure.append(exc)
            finally:
                lock.release()

    thread = threading.Thread(target=keeper, name=f"tap-keeper {conn.endpoint.source}", daemon=True)
    thread.start()
    lent: bytearray | None = None
    item: tuple[Chunk, bytearray | None] | None
    try:
        while True:
            with lock:
                if queued:
                    item = queued.popleft()
                elif failure:
                    raise failure[0]
                elif ended:
                    return
                else:
                    item = read_one(0.5)  # wakes up to check the read timeout
                if item is None:
                    continue
                chunk, lent = item
                away_since = time.monotonic()
            yield chunk
            with lock:
                away_since = None
                if lent is not None:  # the caller is done with the chunk: its buffer is received into again
                    free.append(lent)
                    lent = None
    finally:
        stop.set()
        thread.join()
        # a caller that stopped early may still hold the chunk it was given: that buffer is not reused
        _BUFFERS.put([buf for buf in made if buf is not lent])


def _acks_and_progress(chunk: Chunk) -> tuple[list[tuple[int, int]], bool]:
    """:func:`ack_requests` of a chunk, and whether it holds anything but NOOP keep-alives: one pass in the kernel."""
    if _KERNEL is not None:
        packed, data_packets = _KERNEL.acks(chunk.data, np.ascontiguousarray(chunk.starts, np.int64))
        acks = [(v >> 32, v & 0xFFFFFFFF) for v in np.frombuffer(packed, np.int64).tolist()] if packed else []
        return acks, data_packets > 0
    a = np.frombuffer(chunk.data, np.uint8)
    only_noops = bool(np.all(a[np.asarray(chunk.starts, np.int64) + 1] == OP_NOOP))
    return ack_requests_numpy(chunk.data, chunk.starts), not only_noops
