"""A minimal IPROTO client for reading a Tarantool server's log as an anonymous replica: the replica session.

Protocol facts (greeting, chap-sha1, VOTE, FETCH_SNAPSHOT, SUBSCRIBE, heartbeats, ACKs, error packets) are in
``docs/formats/tarantool-replication.md``. The greeting and the scramble are in :mod:`.handshake`, the framing
and decoding of packets in :mod:`.packets`, the protocol's numbers in :mod:`spark_logsource.tarantool.iproto`.
This module only holds the session; which rows to keep is the business of
:mod:`spark_logsource.tarantool.stream.live`.

Safety rules kept here:

- never JOIN or REGISTER (both write the client into the server's ``_cluster``): only VOTE, AUTH, SELECT,
  FETCH_SNAPSHOT and SUBSCRIBE with ``replica_anon = true`` are ever sent;
- every packet length is checked against :data:`~.packets.MAX_PACKET_BYTES` before bytes are buffered for it;
- every socket read has a timeout (``read_timeout``): a dead or stalled server surfaces as a
  :class:`~spark_logsource.errors.SourceError` within that time, never as a hang;
- the password lives in a :class:`Secret` (its repr is ``'***'``) and is used only to compute the scramble.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgpack

from spark_logsource.errors import AuthenticationError, SourceError
from spark_logsource.net import Secret, connect_tcp, os_reason
from spark_logsource.tarantool.iproto import (
    AUTH,
    BALLOT_GC_VCLOCK,
    BALLOT_VCLOCK,
    ERROR_FLAG,
    FETCH_SNAPSHOT,
    JOIN_META,
    JOIN_SNAPSHOT,
    K_BALLOT,
    K_DATA,
    K_INDEX_ID,
    K_INSTANCE_UUID,
    K_ITERATOR,
    K_KEY,
    K_LIMIT,
    K_OFFSET,
    K_REPLICA_ANON,
    K_REPLICASET_UUID,
    K_SERVER_VERSION,
    K_SPACE_ID,
    K_SYNC,
    K_TUPLE,
    K_TYPE,
    K_USER_NAME,
    K_VCLOCK,
    OK,
    SELECT,
    SUBSCRIBE,
    VOTE,
)
from spark_logsource.tarantool.position import vclock_text
from spark_logsource.tarantool.stream.handshake import GREETING_SIZE, Endpoint, Greeting, parse_greeting, scramble
from spark_logsource.tarantool.stream.packets import (
    ER_ACCESS_DENIED,
    MAX_PACKET_BYTES,
    ConnectionLost,
    Packet,
    PacketBuffer,
    ServerError,
    ServerStarting,
    decode_packet,
    error_of,
    int_vclock,
    packet_type,
)

__all__ = ["Ballot", "Endpoint", "IprotoConnection", "Secret"]

log = logging.getLogger(__name__)

#: The SERVER_VERSION we announce in SUBSCRIBE (2.6.0), as ``(major << 16) | (minor << 8) | patch``.
CLIENT_VERSION = (2 << 16) | (6 << 8) | 0
_RECV_BYTES = 1 << 20
_SPACE_SCHEMA = 272  # _schema
_ITER_EQ = 0


@dataclass(frozen=True, slots=True)
class Ballot:
    """What VOTE tells: the server's current vclock and the vclock of its oldest kept checkpoint."""

    vclock: dict[int, int]
    gc_vclock: dict[int, int]


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
        self._scratch: bytearray | None = None
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
            raise self._timed_out(what) from None
        except OSError as exc:
            raise ConnectionLost(self.source, self.position, f"connection lost: {os_reason(exc)}") from None
        if not chunk:
            raise self._closed(what)
        return chunk

    def _timed_out(self, what: str) -> SourceError:
        return SourceError(self.source, self.position, f"no data and no heartbeat for {self.read_timeout:g} s while "
                                                       f"waiting for {what} (readTimeout)")

    def _closed(self, what: str) -> ConnectionLost:
        return ConnectionLost(self.source, self.position, f"server closed the connection while we waited for {what}")

    def _fill(self, what: str) -> None:
        """One blocking read (up to ``read_timeout``) into a reused buffer, appended to :attr:`buffer`."""
        if self._sock is None:
            raise SourceError(self.source, self.position, "connection is closed")
        if self._scratch is None:
            self._scratch = bytearray(_RECV_BYTES)
        with memoryview(self._scratch) as view:
            try:
                n = self._sock.recv_into(view)
            except TimeoutError:
                raise self._timed_out(what) from None
            except OSError as exc:
                raise ConnectionLost(self.source, self.position, f"connection lost: {os_reason(exc)}") from None
            if not n:
                raise self._closed(what)
            self.buffer.feed(view[:n])

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
            self._fill(what)

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
                self._fill("rows")  # readable: returns at once (a timeout socket would wait otherwise)
            except SourceError:
                return

    def receive(self, what: str) -> None:
        """Wait (up to ``read_timeout``) for more bytes and add them to :attr:`buffer`."""
        self._fill(what)

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
