"""A minimal IPROTO client for reading a Tarantool server's log as an anonymous replica.

Protocol facts (greeting, chap-sha1, VOTE, FETCH_SNAPSHOT, SUBSCRIBE, heartbeats, ACKs, error packets) are in
``docs/formats/tarantool-replication.md``. This module only speaks the protocol; which rows to keep is the
business of :mod:`spark_logsource.tarantool.stream.live`.

Safety rules kept here:

- never JOIN or REGISTER (both write the client into the server's ``_cluster``): only VOTE, AUTH, SELECT,
  FETCH_SNAPSHOT and SUBSCRIBE with ``replica_anon = true`` are ever sent;
- every packet length is checked against :data:`MAX_PACKET_BYTES` before bytes are buffered for it;
- every socket read has a timeout (``read_timeout``): a dead or stalled server surfaces as a
  :class:`~spark_logsource.errors.SourceError` within that time, never as a hang;
- the password lives in a :class:`Secret` (its repr is ``'***'``) and is used only to compute the scramble.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import select
import socket
import struct
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack

from spark_logsource.errors import AuthenticationError, SourceError, UnavailableError
from spark_logsource.native import load_kernel
from spark_logsource.net import Secret, connect_tcp, os_reason, parse_server_uri
from spark_logsource.tarantool.decode.mpext import ext_hook

log = logging.getLogger(__name__)


#: The C twin of PacketBuffer.take_rows_py (``_frames.c``), or None (pure Python; see spark_logsource.native).
_frames = load_kernel("spark_logsource.tarantool._frames")

# Request / response types (``src/box/iproto_constants.h``).
OK = 0x00
SELECT = 0x01
AUTH = 0x07
SUBSCRIBE = 0x42
VOTE = 0x44
FETCH_SNAPSHOT = 0x45
JOIN_META = 0x47
JOIN_SNAPSHOT = 0x48
ERROR_FLAG = 0x8000

# Map keys.
K_TYPE, K_SYNC, K_REPLICA_ID, K_LSN, K_SERVER_VERSION = 0x00, 0x01, 0x02, 0x03, 0x06
K_SPACE_ID, K_INDEX_ID, K_LIMIT, K_OFFSET, K_ITERATOR = 0x10, 0x11, 0x12, 0x13, 0x14
K_KEY, K_TUPLE, K_USER_NAME = 0x20, 0x21, 0x23
K_INSTANCE_UUID, K_REPLICASET_UUID, K_VCLOCK, K_BALLOT, K_DATA = 0x24, 0x25, 0x26, 0x29, 0x30
K_ERROR_24, K_REPLICA_ANON, K_ERROR = 0x31, 0x50, 0x52
BALLOT_VCLOCK, BALLOT_GC_VCLOCK = 0x02, 0x03

GREETING_SIZE = 128
SCRAMBLE_SIZE = 20
#: Largest packet we buffer (a packet is one row: a tuple is at most memtx_max_tuple_size, 1 MiB by default).
MAX_PACKET_BYTES = 256 << 20
#: The SERVER_VERSION we announce in SUBSCRIBE (2.6.0), as ``(major << 16) | (minor << 8) | patch``.
CLIENT_VERSION = (2 << 16) | (6 << 8) | 0
_RECV_BYTES = 1 << 20
_SPACE_SCHEMA = 272  # _schema
_ITER_EQ = 0

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


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the server listens and as whom we log in; :attr:`display` is the URI without credentials."""

    host: str
    port: int
    user: str = "guest"

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tarantool://{host}:{self.port}"

    @classmethod
    def parse(cls, uri: str, option: str = "uri") -> tuple[Endpoint, Secret | None]:
        """``tarantool://user[:password]@host:port`` → (endpoint, password in the URI or None)."""
        parts = parse_server_uri(uri, schemes=("tarantool", "tcp"), form="tarantool://user@host:port", bare=True,
                                 option=option)
        return cls(parts.host, parts.port, parts.user or "guest"), parts.password


def vclock_text(vclock: dict[int, int] | None) -> str:
    """``{1: 5120, 2: 7}`` in Tarantool's own spelling (used in error messages)."""
    if vclock is None:
        return "{}"
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(vclock.items())) + "}"


def scramble(salt: bytes, password: str) -> bytes:
    """chap-sha1: ``sha1(pw) XOR sha1(salt[:20] + sha1(sha1(pw)))``."""
    hash1 = hashlib.sha1(password.encode()).digest()
    hash2 = hashlib.sha1(hash1).digest()
    hash3 = hashlib.sha1(salt[:SCRAMBLE_SIZE] + hash2).digest()
    return bytes(a ^ b for a, b in zip(hash1, hash3, strict=True))


@dataclass(frozen=True, slots=True)
class Greeting:
    version: str
    instance_uuid: str | None
    salt: bytes


def parse_greeting(data: bytes, source: str) -> Greeting:
    """The 128-byte greeting: ``Tarantool <version> (Binary) <uuid>`` and a base64 salt line."""
    if len(data) != GREETING_SIZE or data[63:64] != b"\n" or data[127:128] != b"\n":
        raise SourceError(source, None, "not a Tarantool server: the first 128 bytes are not an IPROTO greeting")
    line1 = data[:63].decode("ascii", "replace").strip()
    words = line1.split()
    if len(words) < 2 or words[0] != "Tarantool":
        raise SourceError(source, None, f"not a Tarantool server: greeting starts {line1[:40]!r}")
    if "(Binary)" not in words:
        raise SourceError(source, None, f"not a binary-protocol port: greeting {line1[:60]!r}")
    try:
        salt = base64.b64decode(data[64:127].strip(), validate=True)
    except ValueError:
        raise SourceError(source, None, "greeting salt is not base64") from None
    if len(salt) < SCRAMBLE_SIZE:
        raise SourceError(source, None, f"greeting salt has {len(salt)} bytes, fewer than {SCRAMBLE_SIZE}")
    instance = words[-1] if len(words) >= 4 else None
    return Greeting(words[1], instance, salt)


@dataclass(frozen=True, slots=True)
class Ballot:
    """What VOTE tells: the server's current vclock and the vclock of its oldest kept checkpoint."""

    vclock: dict[int, int]
    gc_vclock: dict[int, int]


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

    def feed(self, data: bytes) -> None:
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


class IprotoConnection:
    """One TCP connection to a Tarantool server.

    Use :meth:`open` (connect + greeting), then :meth:`vote`, :meth:`authenticate`, :meth:`replicaset_uuid`,
    :meth:`fetch_snapshot`, :meth:`subscribe` and :meth:`packets`; :meth:`close` always.
    """

    def __init__(self, endpoint: Endpoint, *, read_timeout: float, connect_timeout: float | None = None,
                 max_packet: int = MAX_PACKET_BYTES) -> None:
        self.endpoint = endpoint
        self.source = endpoint.display
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout if connect_timeout is not None else min(read_timeout, 10.0)
        self.buffer = PacketBuffer(self.source, max_packet)
        self.greeting: Greeting | None = None
        self._sock: socket.socket | None = None
        self._sync = 0
        self._send_lock = threading.Lock()
        self._ack_thread: threading.Thread | None = None
        self._ack_stop = threading.Event()
        #: Where reading stood, for error messages (set by the caller as rows arrive).
        self.position: str | None = None

    # --- connection ---------------------------------------------------------------------------------------------
    def open(self) -> Greeting:
        self._sock = connect_tcp(self.endpoint.host, self.endpoint.port, self.source,
                                 connect_timeout=self.connect_timeout, read_timeout=self.read_timeout,
                                 error=ConnectionLost)
        data = bytearray()
        while len(data) < GREETING_SIZE:
            chunk = self._recv(GREETING_SIZE - len(data), "the greeting")
            data += chunk
        self.greeting = parse_greeting(bytes(data), self.source)
        log.debug("%s: %s", self.source, self.greeting.version)
        return self.greeting

    def close(self) -> None:
        self._ack_stop.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        if self._ack_thread is not None and self._ack_thread is not threading.current_thread():
            self._ack_thread.join(timeout=2.0)
            self._ack_thread = None

    def __enter__(self) -> IprotoConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv(self, n: int, what: str) -> bytes:
        if self._sock is None:
            raise SourceError(self.source, self.position, "connection is closed")
        try:
            chunk = self._sock.recv(n)
        except TimeoutError:
            raise SourceError(self.source, self.position, f"no data and no heartbeat for {self.read_timeout:g} s "
                                                          f"while waiting for {what} (readTimeout)") from None
        except OSError as exc:
            raise ConnectionLost(self.source, self.position, f"connection lost: {os_reason(exc)}") from None
        if not chunk:
            raise ConnectionLost(self.source, self.position, f"server closed the connection while we waited for "
                                                             f"{what}")
        return chunk

    def _send(self, header: dict[int, Any], body: dict[int, Any] | None) -> None:
        payload = msgpack.packb(header) + (msgpack.packb(body) if body is not None else b"")
        frame = b"\xce" + len(payload).to_bytes(4, "big") + payload
        with self._send_lock:
            if self._sock is None:
                raise SourceError(self.source, self.position, "connection is closed")
            try:
                self._sock.sendall(frame)
            except TimeoutError:
                raise SourceError(self.source, self.position, f"send blocked for {self.read_timeout:g} s") from None
            except OSError as exc:
                raise ConnectionLost(self.source, self.position, f"connection lost: {os_reason(exc)}") from None

    def _next_sync(self) -> int:
        self._sync += 1
        return self._sync

    # --- packets ------------------------------------------------------------------------------------------------
    def raw_packets(self, what: str) -> Iterator[bytes]:
        """Every packet's bytes as they arrive (blocks up to ``read_timeout`` for each read; endless)."""
        buffer = self.buffer
        while True:
            packet = buffer.next()
            while packet is not None:
                yield packet
                packet = buffer.next()
            buffer.feed(self._recv(_RECV_BYTES, what))

    def receive_ready(self, up_to: int) -> None:
        """Add the bytes that have already arrived, up to about ``up_to`` buffered (never waits; errors are left
        for the next blocking read to report)."""
        sock = self._sock
        if sock is None:
            return
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        while self.buffer.buffered() < up_to and poller.poll(0):
            try:
                chunk = sock.recv(_RECV_BYTES)  # readable: returns at once (a timeout socket would wait otherwise)
            except OSError:
                return
            if not chunk:
                return
            self.buffer.feed(chunk)

    def receive(self, what: str) -> None:
        """Wait (up to ``read_timeout``) for more bytes and add them to :attr:`buffer`."""
        self.buffer.feed(self._recv(_RECV_BYTES, what))

    def pending_packets(self, what: str) -> list[bytes]:
        """All complete packets available now; waits (up to ``read_timeout``) only if none is."""
        buffer = self.buffer
        out = []
        packet = buffer.next()
        while packet is None:
            buffer.feed(self._recv(_RECV_BYTES, what))
            packet = buffer.next()
        while packet is not None:
            out.append(packet)
            packet = buffer.next()
        return out

    def _reply(self, sync: int, what: str) -> Packet:
        for raw in self.raw_packets(what):
            packet = decode_packet(raw, self.source)
            if packet.header.get(K_SYNC) != sync:
                log.debug("%s: skipping a packet of sync %r while waiting for %s", self.source,
                          packet.header.get(K_SYNC), what)
                continue
            if packet.type & ERROR_FLAG:
                raise error_of(packet, self.source, self.position)
            return packet
        raise AssertionError("unreachable")

    def request(self, rtype: int, body: dict[int, Any] | None, what: str) -> Packet:
        sync = self._next_sync()
        self._send({K_TYPE: rtype, K_SYNC: sync}, body)
        packet = self._reply(sync, what)
        if packet.type != OK:
            raise SourceError(self.source, self.position, f"protocol error: {what} answered with type {packet.type}")
        return packet

    # --- requests -----------------------------------------------------------------------------------------------
    def vote(self) -> Ballot:
        """VOTE (no authentication needed): the server's vclock and its oldest checkpoint's vclock."""
        packet = self.request(VOTE, None, "the VOTE reply")
        ballot = (packet.body or {}).get(K_BALLOT)
        if not isinstance(ballot, dict):
            raise SourceError(self.source, None, "protocol error: VOTE reply has no ballot")
        return Ballot(int_vclock(ballot.get(BALLOT_VCLOCK), self.source, "ballot vclock"),
                      int_vclock(ballot.get(BALLOT_GC_VCLOCK), self.source, "ballot gc vclock"))

    def authenticate(self, password: Secret | None) -> None:
        """chap-sha1 AUTH as the endpoint's user (guest with no password: nothing to send)."""
        user = self.endpoint.user
        if user == "guest" and not password:
            return
        if self.greeting is None:
            raise SourceError(self.source, None, "authenticate() before open()")
        secret = password.reveal() if password is not None else ""
        body = {K_USER_NAME: user, K_TUPLE: ["chap-sha1", scramble(self.greeting.salt, secret)]}
        try:
            self.request(AUTH, body, "the AUTH reply")
        except ServerStarting:
            raise
        except ServerError as exc:
            raise AuthenticationError(self.source, None, f"login as {user!r} refused: {exc.message}") from None

    def select(self, space: int, key: list[Any], index: int = 0, limit: int = 1 << 30) -> list[Any]:
        body = {K_SPACE_ID: space, K_INDEX_ID: index, K_LIMIT: limit, K_OFFSET: 0, K_ITERATOR: _ITER_EQ, K_KEY: key}
        packet = self.request(SELECT, body, "the SELECT reply")
        data = (packet.body or {}).get(K_DATA)
        if not isinstance(data, list):
            raise SourceError(self.source, None, "protocol error: SELECT reply has no data")
        return data

    def replicaset_uuid(self) -> str:
        """The replicaset UUID, from ``_schema`` key ``cluster`` (or ``replicaset_uuid`` in 3.x)."""
        try:
            rows = self.select(_SPACE_SCHEMA, ["cluster"]) or self.select(_SPACE_SCHEMA, ["replicaset_uuid"])
        except ServerError as exc:
            if exc.code == ER_ACCESS_DENIED:
                raise AuthenticationError(self.source, None, f"user {self.endpoint.user!r} may not read the "
                                          f"replicaset UUID (grant it the 'replication' role): {exc.message}") from None
            raise
        if not rows or not isinstance(rows[0], list) or len(rows[0]) < 2:
            raise SourceError(self.source, None, "the server has no replicaset UUID in _schema")
        return str(rows[0][1])

    def fetch_snapshot(self) -> tuple[dict[int, int], Iterator[bytes]]:
        """FETCH_SNAPSHOT: the read view's vclock, and an iterator over its row packets (raw bytes).

        The iterator ends after the closing OK packet; JOIN_META/JOIN_SNAPSHOT markers (newer servers) are
        skipped. The connection is then back in request mode (SUBSCRIBE may follow on it).
        """
        sync = self._next_sync()
        self._send({K_TYPE: FETCH_SNAPSHOT, K_SYNC: sync}, {})
        first = self._reply(sync, "the FETCH_SNAPSHOT reply")
        start = int_vclock((first.body or {}).get(K_VCLOCK), self.source, "snapshot vclock")
        position = f"snapshot {vclock_text(start)}"

        def rows() -> Iterator[bytes]:
            for raw in self.raw_packets("snapshot rows"):
                rtype = packet_type(raw)
                if rtype is None or rtype & ERROR_FLAG or rtype == OK:
                    packet = decode_packet(raw, self.source)
                    if packet.type & ERROR_FLAG:
                        raise error_of(packet, self.source, position)
                    if packet.type == OK:
                        return
                    rtype = packet.type
                if rtype in (JOIN_META, JOIN_SNAPSHOT):
                    continue
                yield raw

        return start, rows()

    def subscribe(self, replicaset_uuid: str, vclock: dict[int, int]) -> tuple[dict[int, int], str | None]:
        """SUBSCRIBE as an anonymous replica from ``vclock`` (a fresh instance UUID each time).

        Returns the server's vclock and replicaset UUID from the reply; rows follow on :meth:`packets`.
        """
        sync = self._next_sync()
        body = {
            K_REPLICASET_UUID: replicaset_uuid,
            K_INSTANCE_UUID: str(uuid.uuid4()),
            K_VCLOCK: {r: lsn for r, lsn in vclock.items() if r != 0},
            K_SERVER_VERSION: CLIENT_VERSION,
            K_REPLICA_ANON: True,
        }
        self._send({K_TYPE: SUBSCRIBE, K_SYNC: sync}, body)
        packet = self._reply(sync, "the SUBSCRIBE reply")
        reply = packet.body or {}
        server_vclock = int_vclock(reply.get(K_VCLOCK), self.source, "SUBSCRIBE vclock")
        rs = reply.get(K_REPLICASET_UUID)
        return server_vclock, (str(rs) if rs is not None else None)

    # --- acknowledgements ---------------------------------------------------------------------------------------
    def send_ack(self, vclock: dict[int, int]) -> None:
        self._send({K_TYPE: OK}, {K_VCLOCK: vclock})

    def start_acks(self, interval: float, vclock_now: Callable[[], dict[int, int]]) -> None:
        """Send ``OK {vclock}`` every ``interval`` seconds from a daemon thread until :meth:`close`.

        The master drops a replica that is silent for 4 × replication_timeout and sends heartbeats only when
        idle, so ACKs must go out on a timer, also while the consumer is slow to read.
        """
        self._ack_stop.clear()

        def loop() -> None:
            while not self._ack_stop.wait(interval):
                try:
                    self.send_ack(vclock_now())
                except Exception as exc:  # the reading thread sees a broken connection itself
                    log.debug("%s: ACK not sent (%s); stopping acknowledgements", self.source,
                              exc.reason if isinstance(exc, SourceError) else type(exc).__name__)
                    return

        thread = threading.Thread(target=loop, name=f"tarantool-ack {self.source}", daemon=True)
        thread.start()
        self._ack_thread = thread


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
