"""The per-transaction state machine: GTID, table maps, statement text, rows waiting for their XID.

It is fed events one at a time, from a file walk (:mod:`.splits`) or from a replication stream (:mod:`.client`),
and hands the view writer (:mod:`.views`) the facts each event contributes. The state is reset at every *group
start* — a GTID event (MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED, MariaDB GTID) or a QUERY ``BEGIN`` /
``XA START`` not right after a GTID event — so it depends only on the events since the last one.

XID of a transaction (``view=changes``)
    Rows are buffered until the transaction's XID event (or its end without one: COMMIT/ROLLBACK query, the
    next group start, the end of the input) and then emitted with that xid. A transaction with more than
    :data:`MAX_PENDING_ROWS` rows (or :data:`MAX_PENDING_BYTES`) does not grow the buffer: the machine looks
    ahead with the ``look_ahead`` callable it was given (events from a position on: the file, or the buffered
    rest of a streamed transaction) to the transaction's end, takes the XID from there, and then streams the
    rows. Inside a TRANSACTION_PAYLOAD the XID is found by scanning the (already inflated) inner events first.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal

from spark_logsource.errors import CorruptDataError, EncryptedBinlogError
from spark_logsource.framing import BadRange
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogEvent
from spark_logsource.mysql.binlog.fde import FormatDescription
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.binlog.payload import decode_payload_header, iter_payload_events, uncompress_payload
from spark_logsource.mysql.decode.event_bodies import decode_event_body
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.query_event import parse_query
from spark_logsource.mysql.decode.rows import peek_table_id
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.encode.images import EncodedRows, encode_rows_event_c, rows_encoder
from spark_logsource.mysql.encode.runs import RUN_MAX_BYTES, RUN_MAX_ROWS, RowsRun, encode_run
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.views import ViewWriter, table_map_data

__all__ = ["GROUP_TYPES", "LOOK_AHEAD_TYPES", "MAX_PENDING_BYTES", "MAX_PENDING_ROWS", "TransactionMachine", "is_begin",
           "is_end_query"]

#: Rows of one transaction buffered while waiting for its XID before the machine looks ahead instead.
MAX_PENDING_ROWS = 50_000
#: Encoded bytes of one transaction buffered while waiting for its XID before the machine looks ahead instead.
MAX_PENDING_BYTES = 64 << 20
#: Distinct TABLE_MAP events kept decoded (a schema has at most this many tables in use at once).
TABLE_MAP_CACHE_SIZE = 1024
# matched on the decoded statement text (ASCII classes, as mysqlbinlog's byte-wise checks)
BEGIN_RE = re.compile(r"^\s*(BEGIN|XA\s+(START|BEGIN))\b", re.IGNORECASE | re.ASCII)
_END_RE = re.compile(r"^\s*(COMMIT|ROLLBACK)\s*$", re.IGNORECASE | re.ASCII)
GROUP_TYPES = et.GTID_TYPES
#: Event types the changes view must still process (they carry transaction state).
_STATE_TYPES = frozenset({et.QUERY, et.MARIA_QUERY_COMPRESSED, et.XID, et.XA_PREPARE, et.TABLE_MAP,
                          et.ROWS_QUERY, et.MARIA_ANNOTATE_ROWS, et.TRANSACTION_PAYLOAD, et.MARIA_START_ENCRYPTION,
                          *GROUP_TYPES, *et.ROWS_TYPES})
QUERY_TYPES = (et.QUERY, et.MARIA_QUERY_COMPRESSED)
#: The events a look-ahead for a transaction's XID acts on (:meth:`TransactionMachine._look_ahead_xid`); a walk
#: serving it need not yield the others, the bulk of a large transaction (``BinlogFile.events(only=...)``).
LOOK_AHEAD_TYPES = frozenset({et.XID, et.XA_PREPARE, *GROUP_TYPES, *QUERY_TYPES})

log = logging.getLogger(__name__)
_DML_RE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE | re.ASCII)
#: What was already warned about in this process (a warning once, not once per row or per batch).
_WARNED: set[tuple[str, str]] = set()


def warn_once(key: tuple[str, str], message: str, *args: Any) -> None:
    """Log ``message`` at WARNING the first time ``key`` is seen in this process."""
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning(message, *args)


#: ``look_ahead(pos)``: the events from ``pos`` on (a file walk, or the buffered rest of a transaction).
LookAhead = Callable[[int], Iterable[BinlogEvent | BadRange]]


def is_begin(ev: BinlogEvent, decoded: dict[str, Any] | None) -> bool:
    """Whether ``ev`` is a ``BEGIN`` / ``XA START`` query (``decoded``: its decoded body)."""
    if ev.type_code not in QUERY_TYPES or decoded is None:
        return False
    return bool(BEGIN_RE.match(decoded["query"]))


def is_end_query(decoded: dict[str, Any]) -> bool:
    """Whether a decoded query is ``COMMIT`` / ``ROLLBACK`` (the end of a transaction without XID)."""
    return bool(_END_RE.match(decoded["query"]))


def ignorable(ev: BinlogEvent) -> bool:
    """Unknown, and its writer says it may be ignored (Aurora padding, type 100)."""
    return ev.type_code not in et.EVENT_TYPE_NAMES and bool(ev.flags & et.FLAG_IGNORABLE)


#: The largest xid the changes view's ``xid`` column (int64) holds; the event's field is a u64.
XID_MAX = (1 << 63) - 1


def xid_in_range(body: bytes | memoryview) -> int | None:
    """The xid of an XID event's body when the ``xid`` column can hold it; None past it (the rows then wait for the
    XID event itself, whose decoding names the damage)."""
    xid = int.from_bytes(body[:8], "little")
    return xid if xid <= XID_MAX else None

class TransactionMachine:
    """Transaction state over a sequence of events, feeding a :class:`ViewWriter`.

    ``fde`` gives the post-header lengths (call :meth:`set_format` when a stream moves to another file);
    ``look_ahead`` serves the XID of oversized transactions (None: buffer them whole, the caller bounds them).
    """

    #: Whether rows events may be read in runs by the kernel (:meth:`rows_run`); a subclass whose rows are decoded
    #: its own way (``_encode_rows``) says no.
    reads_runs = True

    def __init__(self, fde: FormatDescription, options: BinlogReadOptions, view: ViewWriter,
                 look_ahead: LookAhead | None = None) -> None:
        self.options = options
        self.view = view
        self.events_view = view.events_view
        self.look_ahead = look_ahead
        self._table_map_cache: dict[bytes, TableMap] = {}
        self._encode_rows_event = rows_encoder()
        self.set_format(fde)
        self.reset_group()
        #: Type of the previous event fed through :meth:`feed` (None before the first, -1 after bad bytes).
        self.prev_type: int | None = None

    @property
    def path(self) -> str:
        return self.view.path

    def set_format(self, fde: FormatDescription) -> None:
        """Use ``fde``'s post-header lengths from now on (a new file of a stream)."""
        self.fde = fde
        self.table_id_size = 4 if fde.post_header_len(et.TABLE_MAP, 8) == 6 else 6
        self.query_post_header = fde.post_header_len(et.QUERY, 13)
        self._rows_post_header = {code: fde.post_header_len(code, 10) for code in et.ROWS_TYPES}

    # -- transaction state ------------------------------------------------------------------------------------
    def reset_group(self) -> None:
        """Forget everything of the current transaction (without emitting what is pending)."""
        self.gtid: str | None = None
        self.table_maps: dict[int, TableMap] = {}
        self.table_map_bodies: dict[int, bytes] = {}  # the event body of each of table_maps (runs compare them)
        self.annotate: str | None = None
        self.pending: list[tuple[list[Any], EncodedRows, int]] = []  # changes waiting for their XID
        self.pending_rows = 0
        self.pending_bytes = 0
        self.known_xid: tuple[int | None] | None = None  # set by a look-ahead: (xid,) or (None,)
        self.after_gtid_statement = False

    def begin_group(self) -> None:
        """A group start: end the previous transaction (emit its rows without XID) and reset the state."""
        self.end_transaction(None)
        self.reset_group()

    def _flush_pending(self, xid: int | None) -> None:
        for values, rows, _size in self.pending:
            self.view.changes(values, rows, xid, set_xid=True)
        self.pending = []
        self.pending_rows = 0
        self.pending_bytes = 0

    def end_transaction(self, xid: int | None) -> None:
        """The transaction ended (with ``xid``, or None): emit its buffered rows."""
        self._flush_pending(xid)
        self.known_xid = None

    @staticmethod
    def starts_group(ev: BinlogEvent, decoded_query: dict[str, Any] | None, prev_type: int | None) -> bool:
        """Whether ``ev`` (after an event of type ``prev_type``) opens a new transaction group."""
        return ev.type_code in GROUP_TYPES or (is_begin(ev, decoded_query) and prev_type not in GROUP_TYPES)

    # -- a stream of events -----------------------------------------------------------------------------------
    def feed(self, ev: BinlogEvent) -> None:
        """One event of a stream that began at a transaction boundary (the file walk does this in pieces).

        Bad events become corrupt-record rows / errors per ``mode``; an encrypted binlog raises
        :class:`EncryptedBinlogError` (nothing after it can be read).
        """
        if ignorable(ev):
            return
        decoded_query = None
        if ev.type_code in QUERY_TYPES:
            try:
                decoded_query = self.decode_query(ev)
            except CorruptDataError as exc:
                self.view.bad(ev.pos, ev.next_pos, exc)
                self.prev_type = ev.type_code
                return
        if self.starts_group(ev, decoded_query, self.prev_type):
            self.begin_group()
        self.prev_type = ev.type_code
        try:
            self.process(ev, decoded_query)
        except EncryptedBinlogError:
            raise
        except CorruptDataError as exc:
            self.view.bad(ev.pos, ev.next_pos, exc)

    def finish(self) -> None:
        """The input ended: emit the rows of an unfinished transaction (without XID)."""
        self.end_transaction(None)

    # -- decoding helpers -------------------------------------------------------------------------------------
    def decode_query(self, ev: BinlogEvent) -> dict[str, Any]:
        try:
            return parse_query(ev.body, compressed=ev.type_code == et.MARIA_QUERY_COMPRESSED,
                               post_header_len=self.query_post_header, max_uncompressed=self.options.max_uncompressed)
        except BinlogDecodeError as exc:
            raise exc.at(self.path, ev.pos + HEADER_LEN) from None

    def _peek_table_id(self, ev: BinlogEvent) -> int:
        try:
            return peek_table_id(ev.body, table_id_size=self.table_id_size)
        except BinlogDecodeError as exc:
            raise exc.at(self.path, ev.pos + HEADER_LEN) from None

    def _decode_table_map(self, ev: BinlogEvent) -> TableMap:
        """The TABLE_MAP of ``ev``; every statement logs one, mostly the same bytes as the last time for that table,
        so decoded maps (and the row plans cached on them) are kept by their event bytes."""
        key = bytes(ev.body)
        table_map = self._table_map_cache.get(key)
        if table_map is None:
            try:
                table_map = parse_table_map(ev.body, table_id_size=self.table_id_size)
            except BinlogDecodeError as exc:
                raise exc.at(self.path, ev.pos + HEADER_LEN) from None
            if table_map.columns and all(c.name is None for c in table_map.columns):
                # once per source (the directory, or the server), not per table or file: one fix serves them all
                source = self.path.rpartition("/")[0] or self.path
                warn_once(("no-names", source), "%s: rows carry no column names (the server logged them without "
                          "column metadata; first seen for %s.%s): images are keyed @1, @2, ...; to get named, "
                          "typed columns read one table with view=table (docs/formats/mysql-typed.md)", source,
                          table_map.database, table_map.table)
            if len(self._table_map_cache) >= TABLE_MAP_CACHE_SIZE:
                self._table_map_cache.clear()
            self._table_map_cache[key] = table_map
        return table_map

    def _encode_rows(self, ev: BinlogEvent) -> EncodedRows:
        return self._encode_rows_event(
            ev.type_code, ev.body, post_header_len=self._rows_post_header[ev.type_code],
            table_id_size=self.table_id_size, table_maps=self.table_maps, path=self.path, offset=ev.pos,
            row_format=self.options.row_format, max_uncompressed=self.options.max_uncompressed)

    def _table_map_of(self, ev: BinlogEvent) -> TableMap:
        table_id = self._peek_table_id(ev)
        table_map = self.table_maps.get(table_id)
        if table_map is None:
            raise CorruptDataError(self.path, ev.pos, f"rows event for table id {table_id} has no TABLE_MAP in its "
                                                      "transaction (file or split starting inside a transaction?)")
        return table_map

    # -- one event --------------------------------------------------------------------------------------------
    def process(self, ev: BinlogEvent, decoded_query: dict[str, Any] | None, inner: bool = False) -> None:
        """Apply one event to the state and hand its facts to the view (group starts are the caller's)."""
        code = ev.type_code
        if ignorable(ev):
            return
        if code in et.ROWS_TYPES:
            self._rows_event(ev)
            return
        if not self.events_view and code not in _STATE_TYPES:
            return
        database = table = query = None
        data: Any
        gtid_after: str | Literal[False] | None = False  # False: keep; else the gtid after this event
        xid_end: tuple[int | None] | None = None
        if code in QUERY_TYPES:
            data = decoded_query if decoded_query is not None else self.decode_query(ev)
            database, query = data["schema"] or None, data["query"]
            if _DML_RE.match(query):
                warn_once(("statement", self.path), "%s: statement-based events (a binlog not in ROW format): their "
                          "changes are in the events view's query text only, not in the changes view", self.path)
            if not inner and is_end_query(data):
                xid_end = (None,)
            elif not inner and self.after_gtid_statement and not BEGIN_RE.match(query):
                gtid_after = None  # a DDL / standalone statement: its GTID covers only it
            self.after_gtid_statement = False
        elif code == et.TABLE_MAP:
            table_map = self._decode_table_map(ev)
            self.table_maps[table_map.table_id] = table_map
            self.table_map_bodies[table_map.table_id] = bytes(ev.body)
            database, table = table_map.database, table_map.table
            data = table_map_data(table_map)
        elif code == et.TRANSACTION_PAYLOAD:
            self._payload(ev)
            return
        elif code == et.FORMAT_DESCRIPTION:
            data = self.fde.as_dict()
        else:
            if code == et.MARIA_START_ENCRYPTION or self.events_view or code in _STATE_TYPES:
                try:
                    data = decode_event_body(code, ev.body, fde=self.fde, server_id=ev.server_id, log_pos=ev.log_pos,
                                             max_uncompressed=self.options.max_uncompressed)
                except BinlogDecodeError as exc:
                    raise exc.at(self.path, ev.pos + HEADER_LEN) from None
            else:
                data = {}
            if code in GROUP_TYPES:
                self.gtid = data.get("gtid")
                self.after_gtid_statement = True
            elif code == et.XID:
                if data["xid"] > XID_MAX and not self.events_view:
                    raise CorruptDataError(self.path, ev.pos + HEADER_LEN, f"xid {data['xid']} is past the xid "
                                           f"column's range (int64, at most {XID_MAX}): a damaged XID event")
                xid_end = (data["xid"],)
            elif code == et.XA_PREPARE:
                xid_end = (None,)
            elif code in (et.ROWS_QUERY, et.MARIA_ANNOTATE_ROWS):
                self.annotate = query = data["query"]
        if ev.inner_index is not None:
            data = {**data, "payload_index": ev.inner_index}
        if self.events_view:
            self.view.event(ev, self.gtid, database, table, query, data)
        if xid_end is not None:
            self.end_transaction(xid_end[0])
            self.gtid = None
            self.annotate = None
        elif gtid_after is not False:
            self.gtid = gtid_after

    def rows_event(self, ev: BinlogEvent) -> None:
        """A rows event (what :meth:`process` does with one; a group never starts at one)."""
        self._rows_event(ev)

    def rows_run(self, ev: BinlogEvent, window: tuple[bytes, int], stop: int, crc_len: int,
                 verify: bool) -> RowsRun | None:
        """``ev`` and the rows events after it in the walk's ``window`` (buffer, file offset of its first byte) of
        the same table and shape, with offsets below ``stop``, read by one kernel call (:mod:`.encode.runs`); None when
        that path does not apply (events view, filters on what differs between the events of a run, the Python
        reference, a transaction that must look ahead for its XID, an event the filters drop, ...): then the caller
        hands ``ev`` to :meth:`rows_event`."""
        filters = self.view.filters
        if (not self.reads_runs or self.events_view or not filters.same_for_a_run
                or self._encode_rows_event is not encode_rows_event_c):
            return None
        if not filters.none:
            table_map = self.table_maps.get(self._peek_table_id(ev))
            if table_map is None or not self.view.rows_wanted(ev, table_map, et.ROWS_EVENT_OPS[ev.type_code]):
                return None  # the per-event path skips it, or raises its error
        buffer = self.known_xid is None
        max_rows, max_bytes = RUN_MAX_ROWS, RUN_MAX_BYTES
        if buffer:
            max_rows = min(max_rows, MAX_PENDING_ROWS - self.pending_rows)
            max_bytes = min(max_bytes, MAX_PENDING_BYTES - self.pending_bytes)
        else:
            room = self.view.run_room()
            max_rows = max_rows if room is None else min(max_rows, room)
        if max_rows <= 0 or max_bytes <= 0:
            return None
        run = self._encode_run(ev, window, stop, crc_len, verify, max_rows, max_bytes)
        if run is None:
            return None
        if buffer and (self.pending_rows + run.rows.n > MAX_PENDING_ROWS
                       or self.pending_bytes + run.event_bytes > MAX_PENDING_BYTES):
            return None  # its first event alone is too much: the per-event path looks ahead for the XID
        xid = None if buffer else self.known_xid[0]  # type: ignore[index]
        values = self.view.run_values(run, self.gtid, xid, self.annotate)
        if buffer:
            self.pending.append((values, run.rows, run.event_bytes))
            self.pending_rows += run.rows.n
            self.pending_bytes += run.event_bytes
        else:
            self.view.changes(values, run.rows)
        return run

    def _rows_event(self, ev: BinlogEvent) -> None:
        table_map = self._table_map_of(ev)
        op = et.ROWS_EVENT_OPS[ev.type_code]
        if not self.view.rows_wanted(ev, table_map, op):
            return
        rows = self._encode_rows(ev)
        if self.events_view:
            self.view.rows_event(ev, rows, table_map, op, self.gtid, self.annotate)
            return
        xid: int | None = None
        buffer = self.known_xid is None
        too_much = (self.pending_rows + rows.n > MAX_PENDING_ROWS
                    or self.pending_bytes + ev.event_size > MAX_PENDING_BYTES)
        if buffer and too_much and ev.inner_index is None and self.look_ahead is not None:
            self.known_xid = (self._look_ahead_xid(ev.next_pos),)
            self._flush_pending(self.known_xid[0])
            buffer = False
        if not buffer:
            xid = self.known_xid[0]  # type: ignore[index]
        values = self.view.change_values(ev, self.gtid, xid, table_map, op, self.annotate)
        if buffer:
            self.pending.append((values, rows, ev.event_size))
            self.pending_rows += rows.n
            self.pending_bytes += ev.event_size
        else:
            self.view.changes(values, rows)

    def _encode_run(self, ev: BinlogEvent, window: tuple[bytes, int], stop: int, crc_len: int, verify: bool,
                    max_rows: int, max_bytes: int) -> RowsRun | None:
        """The run that begins with ``ev`` read by the kernel (see :meth:`rows_run`), or None."""
        # a run steps over its TABLE_MAP logged again, and statement texts when no row carries them
        size = self.table_id_size
        map_body = self.table_map_bodies.get(int.from_bytes(ev.body[:size], "little")) if len(ev.body) >= size else None
        return encode_run(ev, window[0], window[1], stop, crc_len=crc_len, verify=verify,
                          table_id_size=self.table_id_size, post_header_len=self._rows_post_header[ev.type_code],
                          table_maps=self.table_maps, path=self.path, as_json=self.options.row_format == "json",
                          max_rows=max_rows, max_bytes=max_bytes, map_body=map_body,
                          skip_notes=not self.view.include_query)

    def _look_ahead_xid(self, pos: int) -> int | None:
        """The XID ending the current transaction, found by walking on from ``pos`` (None if it has none)."""
        assert self.look_ahead is not None
        stop = self.options.stop_position
        for item in self.look_ahead(pos):
            if isinstance(item, BadRange) or (stop is not None and item.pos >= stop):
                return None
            code = item.type_code
            if code == et.XID:
                return xid_in_range(item.body)
            if code in GROUP_TYPES or code == et.XA_PREPARE:
                return None
            if code in QUERY_TYPES:
                try:
                    query = self.decode_query(item)
                except CorruptDataError:
                    return None
                if is_end_query(query) or BEGIN_RE.match(query["query"]):
                    return None
        return None

    def _payload(self, ev: BinlogEvent) -> None:
        header = decode_payload_header(ev.body, path=self.path, offset=ev.pos + HEADER_LEN)
        payload = uncompress_payload(ev.body, header, path=self.path, offset=ev.pos + HEADER_LEN,
                                     max_size=self.options.max_uncompressed)
        inner = list(iter_payload_events(payload, path=self.path, offset=ev.pos))
        if self.events_view:
            data = {"compression_type": header.compression_type, "payload_size": header.payload_size,
                    "uncompressed_size": header.uncompressed_size, "events": len(inner)}
            self.view.event(ev, self.gtid, None, None, None, data)
        if self.known_xid is None:
            for head, body in inner:
                if head[1] == et.XID and len(body) >= 8:
                    xid = xid_in_range(body)
                    if xid is not None:
                        self.known_xid = (xid,)
                        self._flush_pending(xid)
                    break
        for index, (head, body) in enumerate(inner):
            inner_event = BinlogEvent(ev.pos, ev.next_pos, head[0], head[1], head[2], head[3], head[4], head[5],
                                      body, index)
            try:
                query = self.decode_query(inner_event) if head[1] in QUERY_TYPES else None
                self.process(inner_event, query, inner=True)
            except EncryptedBinlogError:
                raise
            except CorruptDataError as exc:
                self.view.bad(ev.pos, ev.next_pos, exc)
