"""The live TAP change stream as a :class:`~spark_logsource.streaming.stream.LogStream`: at-least-once, ACK on commit.

TAP pushes packets and cannot be asked for a range again, so the driver holds the one TAP connection: each
:meth:`TapStream.latest_offset` reads what the server sent, numbering packets in arrival order; :meth:`plan`
hands the packets of a range to the executors inside the slices; once the range is in the sink — Spark's
:meth:`commit`, or Spark asking for the range after it, which it does only after the batch ran and was written to
its commit log — the stream answers the ACKs the server asked for within the range, and only then, and forgets
those packets.

What this guarantees (``docs/formats/memcached-tap.md``, "Delivery guarantees"): every change the server sends is
in a committed micro-batch at least once. A packet is acknowledged only after the batch holding it is committed;
the server re-sends un-acknowledged packets to a registered client that reconnects, and a backfill is followed by
the open checkpoint's items again, so rows can repeat. Repeats of a MUTATION carry the same (vbucket, key, cas);
the stream order of rows is the server's order, and replays re-send a suffix of it in the same order, so "last
row per (vbucket, key)" applied batch after batch reproduces the server's items.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from spark_logsource.errors import CorruptDataError, SourceError
from spark_logsource.memcached.client import TapConnection, ack_requests
from spark_logsource.memcached.position import TapOffset, resume_offset
from spark_logsource.memcached.protocol import HEADER_SIZE
from spark_logsource.memcached.tap import packet_batches
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget

if TYPE_CHECKING:
    from spark_logsource.memcached.format import MemcachedTapFormat

log = logging.getLogger(__name__)

#: How long :meth:`TapStream.latest_offset` waits for the server when it has nothing new.
POLL_WAIT = 0.25
#: Stop reading the socket while this much is received but not committed (TCP then holds the server back).
MAX_BUFFERED = 256 << 20
#: The largest slice handed to one executor task.
SLICE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class TapSlice:
    """Packets ``first_n`` … of one range, back to back in ``data`` (a slice carries its rows: TAP cannot re-read)."""

    first_n: int
    data: bytes
    starts: tuple[int, ...]

    def __repr__(self) -> str:
        return f"TapSlice(first_n={self.first_n}, packets={len(self.starts)}, bytes={len(self.data)})"


@dataclass(slots=True)
class _Received:
    n: int  # 1-based number of the packet in this session
    packet: bytes | memoryview  # bytes, or a view of the chunk's receive buffer
    seq: int
    ack: tuple[int, int] | None  # (opcode, opaque) when the server asked for an ACK
    seq_hi: int  # highest TAP sequence number received in this session up to this packet (NOOPs carry 0)


class TapStream(LogStream):
    """One TAP connection per driver session; see the module docstring for the guarantee."""

    fmt: MemcachedTapFormat

    def __init__(self, fmt: MemcachedTapFormat) -> None:
        super().__init__(fmt)
        assert fmt.endpoint is not None
        self.source = fmt.endpoint.source
        self.name = fmt.conn_name
        self.session = secrets.token_hex(8)
        self._conn: TapConnection | None = None
        self._packets: list[_Received] = []  # received, not committed, in order
        self._received = 0
        self._buffered = 0
        self._failure: SourceError | None = None
        self._acked_to = 0  # highest n whose ACK (if any) was sent
        self.acks_sent: list[tuple[int, int]] = []  # (opcode, opaque) of every ACK this session sent, in order
        self._resume_seq: int | None = None  # TAP sequence number the previous session had committed up to
        self._seq_hi = 0
        self.server_forgot_us: bool | None = None  # decided on the first sequenced packet after a resume

    def __getstate__(self) -> dict[str, Any]:  # executors get the options, never the driver's socket or buffer
        return {"fmt": self.fmt, "source": self.source, "name": self.name, "session": self.session}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._conn = None
        self._packets = []
        self._received = self._buffered = self._acked_to = 0
        self._failure = None
        self.acks_sent = []
        self._resume_seq = None
        self._seq_hi = 0
        self.server_forgot_us = None

    # --- offsets -------------------------------------------------------------------------------------------------
    def _offset(self, n: int, seq: int | None) -> Offset:
        return TapOffset(self.source, self.name, self.session, n, seq).to_offset()

    def _ours(self, offset: Offset) -> TapOffset | None:
        parsed = TapOffset.from_offset(offset, source=self.source)
        return parsed if parsed.session == self.session else None

    def initial_offset(self) -> Offset:
        """A new session's start, or the offset given as ``startingPosition`` (a run that resumes)."""
        resumed = resume_offset(self.fmt.starting_position, self.source)
        return resumed.to_offset() if resumed is not None else self._offset(0, None)

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        """Offsets of one session compare by packet count; an earlier session's offsets all come before ours."""
        oa, ob = TapOffset.from_offset(a, source=self.source), TapOffset.from_offset(b, source=self.source)
        if oa.session == ob.session:
            return oa.compare(ob)
        if oa.session == self.session:
            return 1
        if ob.session == self.session:
            return -1
        return 0

    def default_budget(self) -> ReadBudget:
        return ReadBudget(max_rows=self.fmt.max_rows_per_trigger, max_bytes=self.fmt.max_bytes_per_trigger)

    # --- driver --------------------------------------------------------------------------------------------------
    def _connect(self) -> TapConnection:
        if self._conn is None:
            conn = self.fmt.connection(self.fmt.stream_spec())
            conn.open()
            self._conn = conn
            self._last_data = time.monotonic()
        return self._conn

    def _receive(self, wait: float) -> None:
        """Read what the server sent within ``wait`` seconds into the buffer (nothing when it is full)."""
        if self._failure is not None or self._buffered >= MAX_BUFFERED:
            return
        conn = self._connect()
        try:
            chunk = conn.read(wait)
        except SourceError as exc:
            self._failure = exc
            return
        if chunk is None:
            self._failure = conn.error("the server closed the TAP stream")
            return
        if not len(chunk.starts):
            if time.monotonic() - self._last_data > conn.read_timeout:
                self._failure = conn.error(f"read timeout: nothing from the server for {conn.read_timeout:g} s "
                                           "(not even a keep-alive)")
            return
        self._last_data = time.monotonic()
        acks = dict.fromkeys(ack_requests(chunk.data, chunk.starts))
        data, starts = chunk.data, np.asarray(chunk.starts).tolist()
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(data)
            packet = data[s:end]
            seq = int.from_bytes(packet[12:16], "big")
            want = (packet[1], seq)
            self._received += 1
            self._seq_hi = max(self._seq_hi, seq)
            self._packets.append(_Received(self._received, packet, seq, want if want in acks else None,
                                           self._seq_hi))
            self._buffered += len(packet)
            if seq and self.server_forgot_us is None and self._resume_seq is not None:
                self._check_resume(seq)

    def _check_resume(self, first_seq: int) -> None:
        """A server that still knows a registered client continues its sequence numbers; one that dropped the
        connection (its keep-alive ran out) starts again from the beginning and will not re-send what the previous
        session received but did not commit."""
        self.server_forgot_us = first_seq <= (self._resume_seq or 0)
        if self.server_forgot_us:
            log.warning("%s: the server started a new TAP session for %r (sequence numbers restarted at %d, the "
                        "previous session had committed up to %d): changes that session received but did not "
                        "commit may not be sent again", self.source, self.name, first_seq, self._resume_seq)

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        mine = self._ours(start)
        begin = mine.n if mine is not None else 0
        if mine is not None:
            # Spark asks for the next range only once the range ending at ``start`` ran and is in its commit log
            # (its source commit comes later, with the next batch): acknowledging now keeps a server that waits
            # for our ACK from stalling the query. follow() commits before asking, so nothing changes there.
            self._acknowledge(begin)
        if mine is None and self._conn is None:
            previous = TapOffset.from_offset(start, source=self.source)
            if previous.n:
                self._resume_seq = previous.seq
                log.info("%s: resuming after session %s: the server re-sends what that session did not commit",
                         self.source, previous.session)
        if not any(p.n > begin for p in self._packets):
            self._receive(POLL_WAIT)
        else:
            self._receive(0)
        pending = [p for p in self._packets if p.n > begin]
        if not pending:
            if self._failure is not None:
                raise self._failure
            return start if mine is not None else self._offset(0, None)
        end = pending[0]
        size = 0
        for rows, p in enumerate(pending):
            if rows and ((budget.max_rows is not None and rows + 1 > budget.max_rows)
                         or (budget.max_bytes is not None and size + len(p.packet) > budget.max_bytes)):
                break
            size += len(p.packet)
            end = p
        return self._offset(end.n, end.seq_hi or None)

    def plan(self, start: Offset, end: Offset) -> Sequence[Any]:
        last = self._ours(end)
        if last is None:
            # A range planned by an earlier driver session: its packets were never acknowledged, so the server
            # re-sends them on this connection (they are not lost, they come again under new numbers).
            log.info("%s: range of an earlier session is re-sent by the server, not re-read", self.source)
            return []
        first = self._ours(start)
        begin = first.n if first is not None else 0
        chosen = [p for p in self._packets if begin < p.n <= last.n]
        slices: list[TapSlice] = []
        group: list[_Received] = []
        size = 0
        for p in chosen:
            if group and size + len(p.packet) > SLICE_BYTES:
                slices.append(_slice(group))
                group, size = [], 0
            group.append(p)
            size += len(p.packet)
        if group:
            slices.append(_slice(group))
        return slices

    def commit(self, end: Offset) -> None:
        last = self._ours(end)
        if last is not None:
            self._acknowledge(last.n)

    def _acknowledge(self, upto: int) -> None:
        """Packets 1..``upto`` are in the sink: answer the ACKs the server asked for among them, forget them."""
        if upto <= self._acked_to:
            return
        done = [p for p in self._packets if p.n <= upto]
        acks = [p.ack for p in done if p.ack is not None]
        if acks and self._conn is not None:
            self._conn.send_acks(acks)
            self.acks_sent.extend(acks)
        self._acked_to = upto
        self._packets = [p for p in self._packets if p.n > upto]
        self._buffered -= sum(len(p.packet) for p in done)

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._packets:
            log.info("%s: stopping with %d packets received but not committed: not acknowledged, the server "
                     "re-sends them to the next session of %r", self.source, len(self._packets), self.name)

    # --- executors -----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        spec = self.fmt.batch_spec(self.source)
        data, starts = slice_.data, list(slice_.starts)

        def on_error(pos: int, err: Any) -> CorruptDataError:
            n = slice_.first_n + starts.index(pos) if pos in starts else slice_.first_n
            return CorruptDataError(self.source, None, f"packet {n} of session {self.session}: {err.reason}")

        yield from packet_batches(spec, data, starts, None, on_error)


def _slice(group: list[_Received]) -> TapSlice:
    starts = []
    pos = 0
    for p in group:
        starts.append(pos)
        pos += len(p.packet)
    assert all(len(p.packet) >= HEADER_SIZE for p in group)
    return TapSlice(group[0].n, b"".join(p.packet for p in group), tuple(starts))
