"""The live Tarantool log as a :class:`~spark_logsource.streaming.stream.LogStream` (an anonymous replica).

Offsets (``docs/formats/tarantool-replication.md``)::

    {"v": 1, "kind": "tarantool-replication", "replicaset": "<uuid>", "vclock": {"1": 5120}}

``vclock`` is per origin (replica id) the last transaction id taken; string keys in numeric order, zero
components omitted, component 0 (local rows, never replicated) never present. A range ``[start, end)`` holds
every row whose transaction id ``lsn - tsn`` for its origin ``r`` lies in ``(start[r], end[r]]``. An ``end``
component may fall inside a transaction (a row budget cut it there): that transaction is then emitted whole by
the range that contains its id, and its tail rows are dropped by the next range, whose ``start`` equals it.

A new query that starts from ``snapshot`` gets the start offset ``{..., "vclock": {}, "snapshot": true}``; the
range that follows it holds the server's whole state (``FETCH_SNAPSHOT``: rows with ``file_type`` SNAP, each
carrying the read view's vclock in ``extra.vclock``), then the rows of transactions after that read view up to
the range's end. See the docs for what that first range guarantees (it is not replayable byte for byte).

Driver calls (:meth:`LiveStream.initial_offset`, :meth:`LiveStream.latest_offset`, :meth:`LiveStream.plan`)
open a short connection each (VOTE, AUTH, SELECT of the replicaset UUID). :meth:`LiveStream.read_slice`
opens its own connection, SUBSCRIBEs from ``start``, acknowledges on a timer, reads until every origin is past
``end``, and closes; it reconnects after a lost connection (for up to ``reconnectTimeout``) and resumes after the
last row it received, so a slice gives each row once even across a server restart.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.arrow.columns import string_column
from spark_logsource.errors import CorruptDataError, DataLossError, OptionError, SourceError
from spark_logsource.filters import apply_predicates
from spark_logsource.options import ParseMode
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from spark_logsource.tarantool.decode.columns import column_builder
from spark_logsource.tarantool.decode.rows import SCALAR_COLUMNS, VALUE_COLUMNS
from spark_logsource.tarantool.iproto import ERROR_FLAG, OK
from spark_logsource.tarantool.position import vclock_text
from spark_logsource.tarantool.stream.client import Ballot, IprotoConnection
from spark_logsource.tarantool.stream.packets import (
    ConnectionLost,
    XlogGapError,
    decode_packet,
    error_of,
    packet_type,
    snapshot_row,
    stall_error,
    without_sync,
)

if TYPE_CHECKING:
    from spark_logsource.tarantool.replication_format import TarantoolReplicationFormat

log = logging.getLogger(__name__)

KIND = "tarantool-replication"
VClock = dict[int, int]

_UINT_SIZE = {0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9}
_GAP_RE = re.compile(r"between LSN \d+ (\{[^}]*\}) and \d+ (\{[^}]*\})")
_READY_BYTES = 4 << 20


# --- offsets ------------------------------------------------------------------------------------------------------
def make_offset(replicaset: str, vclock: VClock, snapshot: bool = False) -> Offset:
    """The offset for ``vclock`` of ``replicaset`` (fixed key order, string keys, no zero components)."""
    offset: Offset = {"v": 1, "kind": KIND, "replicaset": replicaset,
                      "vclock": {str(r): int(vclock[r]) for r in sorted(vclock) if r != 0 and vclock[r] > 0}}
    if snapshot:
        offset["snapshot"] = True
    return offset


@dataclass(frozen=True, slots=True)
class Position:
    """A parsed offset."""

    replicaset: str
    vclock: VClock
    snapshot: bool = False


def parse_offset(offset: Offset | str, source: str = "offset") -> Position:
    """Check and parse an offset (a dict or its JSON text)."""
    data = json.loads(offset) if isinstance(offset, str) else offset
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("v") != 1:
        raise OptionError(source, f"not a {KIND} offset (v 1): {str(offset)[:200]}")
    replicaset = data.get("replicaset")
    if not isinstance(replicaset, str):
        raise OptionError(source, "offset has no replicaset UUID")
    return Position(replicaset, parse_vclock(data.get("vclock"), source), bool(data.get("snapshot", False)))


def parse_vclock(value: Any, source: str = "vclock") -> VClock:
    """``{"1": 5120}`` (or int keys) → ``{1: 5120}``; keys 1..31, values ≥ 0."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OptionError(source, f"a vclock must be a JSON object like {{\"1\": 5120}}, got {value!r}")
    out: VClock = {}
    for k, v in value.items():
        try:
            r = int(k)
        except (TypeError, ValueError):
            raise OptionError(source, f"vclock key {k!r} is not a replica id") from None
        if not 0 <= r < 32 or type(v) is not int or v < 0:
            raise OptionError(source, f"vclock entry {k!r}: {v!r} is not replica id 0..31 → lsn ≥ 0")
        if r != 0 and v > 0:
            out[r] = v
    return out


def vclock_max(a: VClock, b: VClock) -> VClock:
    return {r: max(a.get(r, 0), b.get(r, 0)) for r in set(a) | set(b)}


# --- slices -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LiveSlice:
    """One range to read from the server: rows of transactions in ``(start, end]`` (plus the state if snapshot)."""

    replicaset: str
    start: tuple[tuple[int, int], ...]
    end: tuple[tuple[int, int], ...]
    snapshot: bool = False

    @property
    def start_vclock(self) -> VClock:
        return dict(self.start)

    @property
    def end_vclock(self) -> VClock:
        return dict(self.end)

    def describe(self) -> str:
        head = "snapshot + " if self.snapshot else ""
        return f"{head}vclock ({vclock_text(self.start_vclock)}, {vclock_text(self.end_vclock)}]"


# --- the stream ---------------------------------------------------------------------------------------------------
class LiveStream(LogStream):
    """A Tarantool server's log read as an anonymous replica (see the module docstring)."""

    fmt: TarantoolReplicationFormat

    def __repr__(self) -> str:
        return f"LiveStream({self.fmt.endpoint.display})"

    # --- driver -------------------------------------------------------------------------------------------------
    def _connect(self) -> IprotoConnection:
        fmt = self.fmt
        conn = IprotoConnection(fmt.endpoint, read_timeout=fmt.read_timeout, max_packet=fmt.max_packet_bytes)
        try:
            conn.open()
            conn.authenticate(fmt.password)
        except BaseException:
            conn.close()
            raise
        return conn

    def server_state(self) -> tuple[str, Ballot]:
        """(replicaset UUID, ballot) of the server, from one short connection (retried: ``reconnectTimeout``)."""
        return self.fmt.reconnect.call(self._server_state, "asking for the server's vclock")

    def _server_state(self) -> tuple[str, Ballot]:
        with self._connect() as conn:
            ballot = conn.vote()
            return conn.replicaset_uuid(), ballot

    def _check_replicaset(self, expected: str, actual: str, where: Offset | None = None) -> None:
        if expected != actual:
            raise SourceError(self.fmt.endpoint.display, offset_json(where) if where else None,
                              f"replicaset UUID changed: the offset belongs to {expected}, the server is {actual} "
                              "(a different or re-bootstrapped server); start a new query (new checkpoint)")

    def initial_offset(self) -> Offset:
        # Resolved once per stream: Spark may ask again for the same start, and "latest" must not move meanwhile
        # (a later answer past the end it was already given makes the range's end precede its start).
        if getattr(self, "_initial", None) is None:
            self._initial = offset_json(self.resolve_position(self.fmt.starting_position))
        offset: Offset = json.loads(self._initial)  # a copy the caller may change
        return offset

    def resolve_position(self, spec: str) -> Offset:
        """The offset of a ``startingPosition`` / ``endingPosition`` value."""
        replicaset, ballot = self.server_state()
        if spec == "latest":
            return make_offset(replicaset, ballot.vclock)
        if spec == "earliest":
            return make_offset(replicaset, ballot.gc_vclock)
        if spec == "snapshot":
            return make_offset(replicaset, {}, snapshot=True)
        data = json.loads(spec)
        if isinstance(data, dict) and "kind" in data:
            position = parse_offset(data, "startingPosition")
            self._check_replicaset(position.replicaset, replicaset, data)
            return make_offset(replicaset, position.vclock, position.snapshot)
        return make_offset(replicaset, parse_vclock(data, "startingPosition"))

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        position = parse_offset(start)
        replicaset, ballot = self.server_state()
        self._check_replicaset(position.replicaset, replicaset, start)
        server = ballot.vclock
        if position.snapshot:
            # The snapshot range ends at the server's vclock now; it is never cut by a budget.
            return make_offset(replicaset, server)
        end = cap_vclock(position.vclock, vclock_max(position.vclock, server), budget.max_rows)
        latest = make_offset(replicaset, end)
        return start if offset_json(latest) == offset_json(make_offset(replicaset, position.vclock)) else latest

    def compare_offsets(self, a: Offset, b: Offset) -> int:
        """Vclock order; the snapshot start is before every other offset. Concurrent vclocks are an error."""
        pa_, pb = parse_offset(a), parse_offset(b)
        if pa_.replicaset != pb.replicaset:
            self._check_replicaset(pa_.replicaset, pb.replicaset, b)
        if pa_.snapshot or pb.snapshot:
            return (pb.snapshot - pa_.snapshot) if pa_.snapshot != pb.snapshot else 0
        keys = set(pa_.vclock) | set(pb.vclock)
        le = all(pa_.vclock.get(r, 0) <= pb.vclock.get(r, 0) for r in keys)
        ge = all(pa_.vclock.get(r, 0) >= pb.vclock.get(r, 0) for r in keys)
        if le and ge:
            return 0
        if le or ge:
            return -1 if le else 1
        raise SourceError(self.fmt.endpoint.display, None, f"offsets {offset_json(a)} and {offset_json(b)} are "
                          "not ordered (concurrent vclocks)")

    def default_budget(self) -> ReadBudget:
        return ReadBudget(max_rows=self.fmt.max_rows_per_trigger)

    def plan(self, start: Offset, end: Offset) -> Sequence[LiveSlice]:
        a, b = parse_offset(start), parse_offset(end)
        if b.snapshot:
            raise OptionError("endingPosition", "a range cannot end at a snapshot offset")
        if a.replicaset != b.replicaset:
            self._check_replicaset(a.replicaset, b.replicaset, end)
        if not a.snapshot and offset_json(make_offset(a.replicaset, a.vclock)) == offset_json(
                make_offset(b.replicaset, b.vclock)):
            return []
        behind = {r: v for r, v in b.vclock.items() if v < a.vclock.get(r, 0)}
        if behind or any(r not in b.vclock for r in a.vclock):
            raise OptionError("endingPosition", f"end {vclock_text(b.vclock)} is before start {vclock_text(a.vclock)}")
        return [LiveSlice(a.replicaset, tuple(sorted(a.vclock.items())), tuple(sorted(b.vclock.items())), a.snapshot)]

    # --- executors ----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        if not isinstance(slice_, LiveSlice):
            raise TypeError(f"not a LiveSlice: {type(slice_).__name__}")
        yield from _RangeReader(self, slice_).run()


def cap_vclock(start: VClock, end: VClock, max_rows: int | None) -> VClock:
    """``end`` with at most ``max_rows`` LSNs of its one advancing origin; at least one.

    A range must end at a vclock the server passed through, or its rows would not be a prefix of the server's
    order: when several origins advance (rows relayed from other masters), the driver cannot know which vclocks lie
    on the server's path without reading the rows, so the budget is not applied and the range ends at ``end``.
    """
    if max_rows is None:
        return dict(end)
    if sum(1 for r in end if end[r] > start.get(r, 0)) > 1:
        return dict(end)
    left = max(max_rows, 1)
    out = dict(start)
    for r in sorted(end):
        step = min(end[r] - start.get(r, 0), left)
        if step > 0:
            out[r] = start.get(r, 0) + step
            left -= step
    return out


# --- reading one range --------------------------------------------------------------------------------------------
class _RangeReader:
    """Reads one :class:`LiveSlice` (see :meth:`LiveStream.read_slice`)."""

    def __init__(self, stream: LiveStream, slice_: LiveSlice) -> None:
        fmt = stream.fmt
        self.stream = stream
        self.fmt = fmt
        self.slice = slice_
        self.source = fmt.endpoint.display
        self.end = slice_.end_vclock
        #: per origin: transactions with an id ≤ low[r] are not ours (the previous range took them)
        self.low = slice_.start_vclock
        #: per origin: the last LSN received (rows up to it are handled); where a reconnect resumes
        self.received: VClock = dict(self.low)
        self.pending = {r for r, v in self.end.items() if v > self.low.get(r, 0)}
        #: per origin: the last LSN of the range the server had when it answered SUBSCRIBE (rows it surely sends)
        self.available: VClock = {}
        self.schema = fmt.rows_schema()  # the plain rows, also under view=space (typed from them)
        self.corrupt_column = fmt.common.corrupt_column_or_none
        self._out: list[pa.RecordBatch] = []
        self._out_rows = 0
        self._snapshot_started = False
        self._builder = column_builder(fmt.tuple_format)

    def position(self) -> str:
        return f"vclock {vclock_text(self.received)} of {self.slice.describe()}"

    # --- the loop ---
    def run(self) -> Iterator[pa.RecordBatch]:
        conn: IprotoConnection | None = None
        backoff = self.fmt.reconnect.backoff()
        snapshot_pending = self.slice.snapshot
        try:
            while snapshot_pending or self.pending:
                subscribed_at: str | None = None  # the vclock received when SUBSCRIBE was answered
                try:
                    conn = self._open(conn)
                    if snapshot_pending:
                        yield from self._snapshot(conn)
                        snapshot_pending = False
                        if not self.pending:
                            break
                    self._subscribe(conn)
                    subscribed_at = vclock_text(self.received)
                    yield from self._stream(conn)
                except ConnectionLost as exc:
                    if snapshot_pending and self._snapshot_started:
                        raise SourceError(self.source, self.position(),
                                          f"connection lost during the snapshot ({exc.reason}); the snapshot "
                                          "cannot be resumed, the task must be retried") from None
                    conn = self._close(conn)
                    if subscribed_at is not None and vclock_text(self.received) != subscribed_at:
                        # rows came since the last loss: this one gets the whole timeout anew (a server that
                        # answers SUBSCRIBE and drops every connection does not reset it)
                        backoff.succeeded()
                    backoff.failed(exc, f"reading; resuming at vclock {vclock_text(self.received)}")
                except XlogGapError as exc:
                    conn = self._close(conn)
                    self._data_loss(exc)
            yield from self._flush(force=True)
        finally:
            self._close(conn)

    def _open(self, conn: IprotoConnection | None) -> IprotoConnection:
        self._close(conn)
        conn = self.stream._connect()
        try:
            replicaset = conn.replicaset_uuid()
            self.stream._check_replicaset(self.slice.replicaset, replicaset)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _close(conn: IprotoConnection | None) -> None:
        if conn is not None:
            conn.close()

    def _data_loss(self, exc: XlogGapError) -> None:
        match = _GAP_RE.search(exc.message)
        missing = (f"the rows between vclock {match.group(1)} and {match.group(2)}" if match
                   else f"part of vclock range {self.slice.describe()} ({exc.message})")
        if self.fmt.fail_on_data_loss:
            raise DataLossError(self.source, missing) from None
        log.warning("%s: data loss: %s is no longer available; continuing after it (failOnDataLoss=false)",
                    self.source, missing)
        resume: VClock | None = None
        if match:
            resume = {int(k): int(v) for k, v in re.findall(r"(\d+): (\d+)", match.group(2))}
        if not resume or all(resume.get(r, 0) <= self.received.get(r, 0) for r in resume):
            resume = self.stream.server_state()[1].gc_vclock
        if all(resume.get(r, 0) <= self.received.get(r, 0) for r in self.pending):
            raise DataLossError(self.source, missing, hint="and no newer position is available either") from None
        self.received = vclock_max(self.received, resume)
        self.low = vclock_max(self.low, resume)
        for r in list(self.pending):
            if self.received.get(r, 0) >= self.end[r]:
                self.pending.discard(r)

    # --- snapshot ---
    def _snapshot(self, conn: IprotoConnection) -> Iterator[pa.RecordBatch]:
        read_view, rows = conn.fetch_snapshot()
        self._snapshot_started = True
        conn.position = f"snapshot {vclock_text(read_view)}"
        tag = b"\x26" + msgpack.packb(read_view)
        chunk: list[bytes] = []
        count = 0
        for raw in rows:
            chunk.append(snapshot_row(raw, tag, self.source))
            if len(chunk) >= self.fmt.common.batch_size:
                count += len(chunk)
                yield from self._emit_rows(chunk, "SNAP")
                chunk = []
        count += len(chunk)
        yield from self._emit_rows(chunk, "SNAP")
        log.info("%s: snapshot at vclock %s: %d rows", self.source, vclock_text(read_view), count)
        # Transactions up to the read view are in the state: stream only those after it.
        self.low = vclock_max(self.low, read_view)
        self.received = vclock_max(self.received, read_view)
        self.pending = {r for r in self.pending if self.end[r] > self.low.get(r, 0)}

    # --- stream ---
    def _subscribe(self, conn: IprotoConnection) -> None:
        server_vclock, replicaset = conn.subscribe(self.slice.replicaset, self.received)
        if replicaset is not None:
            self.stream._check_replicaset(self.slice.replicaset, replicaset)
        self.available = {r: min(self.end[r], server_vclock.get(r, 0)) for r in self.pending}
        behind = {r: self.end[r] for r in self.pending if server_vclock.get(r, 0) < self.end[r]}
        if behind:
            log.info("%s: server vclock %s is behind the range end %s; waiting for it", self.source,
                     vclock_text(server_vclock), vclock_text(self.end))
        received = self.received
        conn.start_acks(self.fmt.ack_interval, lambda: dict(received))
        conn.position = self.position()

    def _stream(self, conn: IprotoConnection) -> Iterator[pa.RecordBatch]:
        buffer = conn.buffer
        limit = max(self.fmt.common.batch_size, 4096)
        last_row = time.monotonic()
        payload = bytearray()  # rows framed and not decoded yet (``bounds``: where each ends)
        bounds: list[int] = []
        while self.pending:
            if buffer.buffered() < _READY_BYTES:
                conn.receive_ready(_READY_BYTES)  # decode in large chunks when the server is ahead of us
            other = buffer.take_rows(payload, bounds, limit - len(bounds))
            if bounds:
                if other or len(bounds) >= limit or self._due(len(bounds)) <= 0:
                    # A whole batch, a packet of another kind next, or no row surely coming: decode now. Rows
                    # count as received only when decoded, so a lost connection resumes before the framed ones.
                    yield from self._take(bytes(payload), bounds)
                    last_row = time.monotonic()  # after the hand-over: a consumer's pause is no server stall
                    payload, bounds = bytearray(), []
                    conn.position = self.position()
                else:
                    # More rows of the server's log are on their way: gather a whole batch before decoding (read
                    # at once all the same: the kernel's queue of small packets stays short, see the docs).
                    conn.receive("rows")
                continue
            # Not a row of the usual shape (heartbeat, error, unusual header), or more bytes are needed.
            raw = buffer.next()
            if raw is None:
                conn.receive("rows")
                continue
            payload, bounds = self._rows_of([raw])
            now = time.monotonic()
            if bounds:
                yield from self._take(bytes(payload), bounds)
                last_row = time.monotonic()
                conn.position = self.position()
                payload, bounds = bytearray(), []
            elif now - last_row > self.fmt.read_timeout:
                raise stall_error(self.source, self.position(), self.received, self.pending, self.end,
                                  self.fmt.read_timeout, self.stream.server_state()[1].gc_vclock)

    def _due(self, framed: int) -> int:
        """A lower bound of the rows still to arrive that the server surely sends: LSNs of the range it had when
        it answered SUBSCRIBE, not received yet, less the ``framed`` rows waiting to be decoded."""
        return sum(max(0, self.available.get(r, 0) - self.received.get(r, 0)) for r in self.pending) - framed

    def _rows_of(self, packets: list[bytes]) -> tuple[bytearray, list[int]]:
        """The data rows of ``packets`` as one payload (SYNC removed from each header), and where each ends."""
        payload = bytearray()
        bounds: list[int] = []
        for p in packets:
            t = packet_type(p)
            if t is not None and not t & ERROR_FLAG and t != OK and len(p) > 4 and p[3] == 0x01 and t < 0x80:
                # Fast path: {0: type, 1: sync, ...}: drop the sync entry, one less in the fixmap count.
                v = p[4]
                size = 1 if v < 0x80 else _UINT_SIZE.get(v, 0)
                if size:
                    payload.append(p[0] - 1)
                    payload += p[1:3]
                    payload += p[4 + size:]
                    bounds.append(len(payload))
                    continue
            packet = decode_packet(p, self.source)
            if packet.type & ERROR_FLAG:
                raise error_of(packet, self.source, self.position())
            if packet.type == OK:
                continue  # a heartbeat
            payload += without_sync(p, self.source)
            bounds.append(len(payload))
        return payload, bounds

    def _take(self, payload: bytes, bounds: list[int]) -> Iterator[pa.RecordBatch]:
        cols = self._decode(payload, bounds)
        if cols is None:
            return
        lsn, rid, tx = (_ints(cols[name]) for name in ("lsn", "replica_id", "tsn"))
        commit = _bools(cols["is_commit"])
        keep = np.zeros(len(lsn), dtype=bool)
        for r in np.unique(rid[lsn > 0]).tolist():
            mine = (rid == r) & (lsn > 0)
            end = self.end.get(r, 0)
            keep |= mine & (tx > self.low.get(r, 0)) & (tx <= end) & (lsn > self.received.get(r, 0))
            if r in self.pending and bool(np.any(mine & (((tx <= end) & (lsn >= end) & commit) | (tx > end)))):
                self.pending.discard(r)
            self.received[r] = max(self.received.get(r, 0), int(lsn[mine].max()))
        keep |= cols["corrupt"].is_valid().to_numpy(zero_copy_only=False)
        if keep.any():
            batch = self._to_batch(cols, "XLOG")
            if not keep.all():
                batch = batch.filter(pa.array(keep))
            self._add(batch)
        yield from self._flush(force=False)

    def _decode(self, payload: bytes, bounds: list[int]) -> dict[str, pa.Array] | None:
        """Columns of the rows of ``payload`` (row ``i`` ends at ``bounds[i]``); bad rows follow ``mode``."""
        builder = self._builder
        try:
            builder.add_payload(payload, self.source, 0)
        except CorruptDataError:
            # Rare path: row by row, to find the bad ones (a failed add_payload adds nothing).
            pos = 0
            for row_end in bounds:
                try:
                    builder.add_payload(payload[pos:row_end], self.source, 0)
                except CorruptDataError as exc:
                    error = SourceError(self.source, self.position(), f"undecodable row: {exc.reason}")
                    mode = self.fmt.common.mode
                    if mode is ParseMode.FAILFAST:
                        raise error from None
                    log.warning("%s", error)
                    if mode is ParseMode.PERMISSIVE:
                        builder.add_corrupt(0, str(error))
                pos = row_end
        if not builder.rows:
            return None
        return builder.take(builder.rows, 1 << 62)

    def _emit_rows(self, raw_rows: list[bytes], file_type: str) -> Iterator[pa.RecordBatch]:
        if not raw_rows:
            return
        payload = b"".join(raw_rows)
        cols = self._decode(payload, list(itertools.accumulate(len(r) for r in raw_rows)))
        if cols is not None:
            self._add(self._to_batch(cols, file_type))
        yield from self._flush(force=False)

    def _add(self, batch: pa.RecordBatch) -> None:
        batch = apply_predicates(batch, self.fmt.option_predicates, keep_rows_with=self.corrupt_column)
        if len(batch):
            self._out.append(batch)
            self._out_rows += len(batch)

    def _flush(self, force: bool) -> Iterator[pa.RecordBatch]:
        size = self.fmt.common.batch_size
        if not self._out or (not force and self._out_rows < size):
            return
        if len(self._out) == 1 and self._out_rows <= size:
            yield self._out.pop()
            self._out_rows = 0
            return
        table = pa.Table.from_batches(self._out, schema=self.schema).combine_chunks()
        self._out, self._out_rows = [], 0
        yield from table.to_batches(max_chunksize=size)

    def _to_batch(self, cols: dict[str, pa.Array], file_type: str) -> pa.RecordBatch:
        """The output batch: the decoded columns plus where the rows came from (no byte offset on the wire)."""
        n = len(cols["lsn"])
        arrays = [string_column(self.source, n), pa.nulls(n, pa.int64()), string_column(file_type, n)]
        arrays += [cols[name] for name in SCALAR_COLUMNS]
        arrays += [cols[name] for name in VALUE_COLUMNS]
        if self.corrupt_column is not None:
            arrays.append(cols["corrupt"])
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _ints(array: pa.Array) -> np.ndarray:
    """An integer column as numpy, nulls (corrupt-record rows) as 0."""
    if array.null_count:
        array = pc.fill_null(array, 0)
    ints: np.ndarray = array.to_numpy()
    return ints


def _bools(array: pa.Array) -> np.ndarray:
    if array.null_count:
        array = pc.fill_null(array, False)
    bools: np.ndarray = array.to_numpy(zero_copy_only=False)
    return bools
