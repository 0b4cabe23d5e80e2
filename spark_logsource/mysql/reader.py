"""Binlog files to Arrow record batches: the ``changes`` and ``events`` views, filters, splits, corrupt records.

Entry point :func:`iter_file_batches` reads one byte range ``[start, end)`` of one file (the lead's Spark layer and
the Arrow API call it per split).

Transactions and splits
    A *group start* is a GTID event (MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED, MariaDB GTID) or a QUERY
    ``BEGIN`` / ``XA START`` not right after a GTID event. The per-transaction state (GTID, table maps, the
    ANNOTATE_ROWS / ROWS_QUERY statement, rows waiting for their XID) is reset at every group start, so it
    only depends on the events since the last one, whatever offset reading began at.

    A split ``[start, end)`` with ``start > 0`` begins at its first *sync point*: the walk starts at the first
    offset >= start where a valid event header is found (:meth:`BinlogFile.resync`: known type, plausible size,
    ``log_pos``, CRC) and skips events up to the first group start whose kind is certain from the walk alone (a
    GTID event, or a BEGIN whose predecessor was walked and is not a GTID event). It reads every event from
    there, past ``end`` if needed, up to the first such sync point at or after ``end`` (found with the same
    rule from ``resync(end)``), so consecutive splits partition the event chain exactly: their union equals
    the whole-file read, event for event and row for row. A split at ``start == 0`` reads from the FDE. Events
    outside transactions (PREVIOUS_GTIDS, ROTATE, GTID_LIST, ...) are read by the split whose walk reaches
    them. The FDE is always taken from the file head.

XID of a transaction (``view=changes``)
    Rows are buffered until the transaction's XID event (or its end without one: COMMIT/ROLLBACK query, the
    next group start, the end of the range) and then emitted with that xid. A transaction with more than
    :data:`MAX_PENDING_ROWS` rows does not grow the buffer: the reader looks ahead with event headers (and the
    bodies of QUERY events) to the transaction's end, takes the XID from there, and then streams the rows.
    Inside a TRANSACTION_PAYLOAD the XID is found by scanning the (already inflated) inner events first.

Option semantics (mysqlbinlog's): ``start_position`` / ``stop_position`` keep events whose ``pos`` is in
``[start, stop)`` (reading stops at ``stop``); ``start_datetime`` / ``stop_datetime`` keep events whose
timestamp is in ``[start, stop)`` (a filter: mysqlbinlog stops at the first later event, which is the same for
files whose timestamps do not go back); ``server_ids``, ``databases`` (the QUERY schema or the table's
database), ``tables`` (``db.table`` with ``*`` / ``?`` wildcards), ``ops`` and ``event_types`` (names as in
:mod:`event_types`, ``_EVENT`` suffix optional) filter events/rows; in ``view=events`` events without a
database/table/op are not filtered by those options. Pushed-down predicates are applied exactly to every batch
(:func:`apply_predicates`); rows events whose table, op, server id, time or position fail a filter or a
predicate are skipped without decoding their rows.

Bad data (``mode``)
    FAILFAST raises the :class:`CorruptDataError` (path + offset). PERMISSIVE emits one row per bad event or
    unreadable byte range with ``file``, ``pos``, ``next_pos`` and the corrupt-record column set, and keeps
    every good event. DROPMALFORMED logs and skips. A broken file head (magic, FDE) or an encrypted binlog
    (START_ENCRYPTION) ends the file: one error for the whole rest (emitted by the split at offset 0, resp. the
    split reaching the event). A rows event whose TABLE_MAP is not in its transaction is an error, not a guess.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..arrowcols import repeated_strings, string_column, variant_array
from ..errors import CorruptDataError, EncryptedBinlogError
from ..filters import Predicate, apply_predicates
from ..jsontext import to_json
from ..options import CommonOptions, ParseMode
from ..variant import encode_variant
from . import event_types as et
from .compression import DEFAULT_MAX_UNCOMPRESSED
from .event_bodies import decode_event_body
from .events import BinlogEvent, BinlogFile, FramingError, is_gzip
from .header import HEADER_LEN
from .payload import decode_payload_header, iter_payload_events, uncompress_payload
from .query_event import decode_query
from .rows import peek_table_id
from .rows_encode import EncodedRows, rows_encoder
from .schema import CHANGES_COLUMNS, EVENTS_COLUMNS, binlog_schema
from .tablemap import TableMap, decode_table_map

__all__ = ["MAX_PENDING_ROWS", "BinlogReadOptions", "binlog_schema", "find_split_start", "iter_file_batches"]

log = logging.getLogger(__name__)

#: Rows of one transaction buffered while waiting for its XID before the reader looks ahead instead.
MAX_PENDING_ROWS = 50_000
#: Distinct TABLE_MAP events kept decoded per file read (a schema has at most this many tables in use at once).
TABLE_MAP_CACHE_SIZE = 1024
#: String and binary bytes in one output batch at most (Arrow's string and binary columns hold < 2 GiB).
MAX_BATCH_BYTES = 256 << 20
#: Encoded bytes of one transaction buffered while waiting for its XID before the reader looks ahead instead.
MAX_PENDING_BYTES = 64 << 20
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# matched on the decoded statement text (ASCII classes, as mysqlbinlog's byte-wise checks)
_BEGIN_RE = re.compile(r"^\s*(BEGIN|XA\s+(START|BEGIN))\b", re.IGNORECASE | re.ASCII)
_END_RE = re.compile(r"^\s*(COMMIT|ROLLBACK)\s*$", re.IGNORECASE | re.ASCII)
_GROUP_TYPES = et.GTID_TYPES
_STATE_TYPES = frozenset({et.QUERY, et.MARIA_QUERY_COMPRESSED, et.XID, et.XA_PREPARE, et.TABLE_MAP,
                          et.ROWS_QUERY, et.MARIA_ANNOTATE_ROWS, et.TRANSACTION_PAYLOAD, et.MARIA_START_ENCRYPTION,
                          *_GROUP_TYPES, *et.ROWS_TYPES})


@dataclass(frozen=True)
class BinlogReadOptions:
    """Everything :func:`iter_file_batches` needs besides the file and the byte range."""

    view: str = "changes"
    row_format: str = "variant"
    common: CommonOptions = field(default_factory=CommonOptions)
    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: dt.datetime | None = None
    stop_datetime: dt.datetime | None = None
    server_ids: frozenset[int] | None = None
    databases: tuple[str, ...] | None = None
    tables: tuple[str, ...] | None = None
    ops: tuple[str, ...] | None = None
    event_types: tuple[str, ...] | None = None
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
    #: Fill the changes view's ``query`` column. The statement is repeated on every row it changed, so a
    #: 1000-row INSERT puts its whole text on 1000 rows; false leaves the column null.
    include_query: bool = True


def _normalise_type_name(name: str) -> str:
    name = name.strip().upper()
    return name[:-6] if name.endswith("_EVENT") else name


def _seconds(value: dt.datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH).total_seconds()


class _Filters:
    """The option filters and the pushed predicates, evaluated on event-level facts before decoding."""

    _EVENT_COLUMNS = frozenset({"pos", "next_pos", "server_id", "timestamp", "event_type", "event_type_code",
                                "database", "table", "op", "event_size", "flags"})

    def __init__(self, options: BinlogReadOptions, predicates: Sequence[Predicate]) -> None:
        self.start_pos = options.start_position
        self.stop_pos = options.stop_position
        self.start_ts = None if options.start_datetime is None else _seconds(options.start_datetime)
        self.stop_ts = None if options.stop_datetime is None else _seconds(options.stop_datetime)
        self.server_ids = options.server_ids
        self.databases = frozenset(options.databases) if options.databases else None
        self.table_patterns = [re.compile(fnmatch.translate(t)) for t in options.tables] if options.tables else None
        self.ops = frozenset(options.ops) if options.ops else None
        self.event_types = frozenset(_normalise_type_name(n) for n in options.event_types) \
            if options.event_types else None
        self.predicates = [p for p in predicates if p.column in self._EVENT_COLUMNS]
        self.needs_datetime = any(p.column == "timestamp" for p in self.predicates)

    def header_ok(self, ev: BinlogEvent) -> bool:
        """Filters on the header alone (position, time, server id)."""
        if self.start_pos is not None and ev.pos < self.start_pos:
            return False
        if self.start_ts is not None and ev.timestamp < self.start_ts:
            return False
        if self.stop_ts is not None and ev.timestamp >= self.stop_ts:
            return False
        return self.server_ids is None or ev.server_id in self.server_ids

    def table_ok(self, database: str | None, table: str | None) -> bool:
        if database is not None and self.databases is not None and database not in self.databases:
            return False
        if table is not None and self.table_patterns is not None:
            name = f"{database}.{table}"
            return any(p.match(name) for p in self.table_patterns)
        return True

    def facts_ok(self, ev: BinlogEvent, type_name: str, database: str | None, table: str | None,
                 op: str | None) -> bool:
        """Every filter that can be decided for the event (predicates included, on the event's columns)."""
        if not self.header_ok(ev):
            return False
        if self.event_types is not None and type_name not in self.event_types:
            return False
        if op is not None and self.ops is not None and op not in self.ops:
            return False
        if not self.table_ok(database, table):
            return False
        if self.predicates:
            facts = {"pos": ev.pos, "next_pos": ev.next_pos, "server_id": ev.server_id, "event_type": type_name,
                     "event_type_code": ev.type_code, "database": database, "table": table, "op": op,
                     "event_size": ev.event_size, "flags": ev.flags}
            if self.needs_datetime:
                facts["timestamp"] = _EPOCH + dt.timedelta(seconds=ev.timestamp)
            for p in self.predicates:
                if p.column in facts and not p.matches(facts[p.column]):
                    return False
        return True


class _Chunk:
    """Rows that share every column but the per-row ones: one rows event's changes, or one single row.

    ``values[i]`` is the value of column ``i`` for every row of the chunk, except for the per-row columns:
    ``row_index`` (``first_row`` .. ``first_row + n - 1``) and the variant columns, whose encoded cells are in
    ``encoded[i]`` — a list of JSON texts (rowFormat json) or a ``(values, metadatas)`` pair of lists (variant; a
    None value is SQL NULL).
    """

    __slots__ = ("encoded", "first_row", "n", "size", "values")

    def __init__(self, values: list[Any], n: int, encoded: dict[int, Any], json: bool, first_row: int = 0) -> None:
        self.values = values
        self.n = n
        self.encoded = encoded
        self.first_row = first_row
        # string and binary bytes the chunk puts into a batch (what Arrow's 2 GiB per column limit counts)
        size = n * sum(len(v) for v in values if isinstance(v, str))
        for cells in encoded.values():
            for column in ((cells,) if json else cells):
                size += sum(map(len, filter(None, column)))
        self.size = size

    def row_bytes(self, json: bool) -> list[int]:
        """Bytes each row puts into the batch's string and binary columns (what the 2 GiB Arrow limit counts)."""
        fixed = sum(len(v) for v in self.values if isinstance(v, str))
        sizes = [fixed] * self.n
        for cells in self.encoded.values():
            column = cells if json else cells[0]
            for r, cell in enumerate(column):
                if cell is not None:
                    sizes[r] += len(cell)
        return sizes

    def rows(self, lo: int, hi: int, json: bool) -> _Chunk:
        """The chunk of rows ``lo`` .. ``hi - 1``."""
        encoded = {i: (cells[lo:hi] if json else (cells[0][lo:hi], cells[1][lo:hi]))
                   for i, cells in self.encoded.items()}
        return _Chunk(self.values, hi - lo, encoded, json, self.first_row + lo)


class _Output:
    """Chunks of the view being built, turned into RecordBatches of at most ``batch_size`` rows and at most
    :data:`MAX_BATCH_BYTES` of string and binary data (a statement repeated on thousands of rows, large BLOBs)."""

    def __init__(self, path: str, options: BinlogReadOptions, predicates: Sequence[Predicate]) -> None:
        self.path = path
        self.view = options.view
        self.json = options.row_format == "json"
        corrupt = options.common.corrupt_column_or_none
        self.schema = binlog_schema(options.view, options.row_format, corrupt)
        self.columns = list(CHANGES_COLUMNS if options.view == "changes" else EVENTS_COLUMNS)
        if corrupt:
            self.columns.append(("_corrupt", pa.string()))
        self.variant_columns = [i for i, (_name, type_) in enumerate(self.columns) if type_ is None]
        self.row_index_column = next((i for i, (name, _t) in enumerate(self.columns) if name == "row_index"), None)
        self.batch_size = options.common.batch_size
        self.predicates = list(predicates)
        self.chunks: list[_Chunk] = []
        self.rows = 0
        self.bytes = 0

    def add(self, row: tuple) -> None:
        """One row given cell by cell; variant cells are Python values (or ``_ABSENT`` for SQL NULL)."""
        values = list(row) + [None] * (len(self.columns) - len(row))
        encoded = {}
        for i in self.variant_columns:
            cell = values[i]
            if self.json:
                encoded[i] = [None if cell is _ABSENT else to_json(cell)]
            elif cell is _ABSENT:
                encoded[i] = ([None], [b""])
            else:
                value, metadata = encode_variant(cell)
                encoded[i] = ([value], [metadata])
        self._append(_Chunk(values, 1, encoded, self.json))

    def add_corrupt(self, pos: int | None, next_pos: int | None, message: str) -> None:
        """One corrupt-record row (PERMISSIVE): file, pos, next_pos and the message; everything else null."""
        row: list[Any] = [None] * len(self.columns)
        row[1], row[2] = pos, next_pos
        for i in self.variant_columns:
            row[i] = _ABSENT
        row[-1] = message
        self.add(tuple(row))

    def add_changes(self, values: list[Any], rows: EncodedRows, before: int, after: int) -> None:
        """The rows of one rows event: ``values`` holds the shared columns, ``rows`` the encoded images."""
        self._append(_Chunk(list(values), rows.n, {before: rows.before, after: rows.after}, self.json))

    def _append(self, chunk: _Chunk) -> None:
        if chunk.n:
            self.chunks.append(chunk)
            self.rows += chunk.n
            self.bytes += chunk.size

    def full(self) -> bool:
        return self.rows >= self.batch_size or self.bytes >= MAX_BATCH_BYTES

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Everything added so far, as batches within the row and byte limits, with the predicates applied."""
        chunks, self.chunks, self.rows, self.bytes = self.chunks, [], 0, 0
        group: list[_Chunk] = []
        rows = size = 0
        for chunk in chunks:
            if rows + chunk.n <= self.batch_size and size + chunk.size <= MAX_BATCH_BYTES:
                group.append(chunk)
                rows += chunk.n
                size += chunk.size
                continue
            sizes = chunk.row_bytes(self.json)
            lo = 0
            while lo < chunk.n:
                # as many of this chunk's rows as fit the current batch (at least one row per batch)
                hi, taken = lo, 0
                while hi < chunk.n and ((not group and hi == lo) or (
                        rows + hi - lo < self.batch_size and size + taken + sizes[hi] <= MAX_BATCH_BYTES)):
                    taken += sizes[hi]
                    hi += 1
                if hi == lo:  # the batch is full
                    yield from self._build(group)
                    group, rows, size = [], 0, 0
                    continue
                group.append(chunk if lo == 0 and hi == chunk.n else chunk.rows(lo, hi, self.json))
                rows += hi - lo
                size += taken
                lo = hi
        if group:
            yield from self._build(group)

    def _build(self, chunks: list[_Chunk]) -> Iterator[pa.RecordBatch]:
        arrays = [self._column(i, chunks) for i in range(len(self.columns))]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self.predicates:
            batch = apply_predicates(batch, self.predicates)
        if len(batch):
            yield batch

    def _column(self, i: int, chunks: list[_Chunk]) -> pa.Array:
        name, type_ = self.columns[i]
        if name == "file":
            return string_column(self.path, sum(c.n for c in chunks))
        if i == self.row_index_column:
            return pa.array(np.concatenate([np.arange(c.first_row, c.first_row + c.n, dtype=np.int32)
                                            for c in chunks]), pa.int32())
        if type_ is None:
            if self.json:
                texts: list[str | None] = []
                for c in chunks:
                    texts.extend(c.encoded[i])
                return pa.array(texts, pa.string())
            values: list[bytes | None] = []
            metadatas: list[bytes | None] = []
            for c in chunks:
                chunk_values, chunk_metadatas = c.encoded[i]
                values.extend(chunk_values)
                metadatas.extend(chunk_metadatas)
            return variant_array(values, metadatas)
        # One value per chunk, repeated by index: a rows event's statement text (the query column) is encoded once,
        # not once per row.
        run_values = [c.values[i] for c in chunks]
        if all(c.n == 1 for c in chunks):
            counts = None
        else:
            counts = [c.n for c in chunks]
            if pa.types.is_string(type_):
                return repeated_strings(run_values, counts)
        if name == "timestamp":
            runs = pa.array([None if v is None else v * 1_000_000 for v in run_values], pa.int64()).cast(type_)
        else:
            runs = pa.array(run_values, type_)
        if counts is None:
            return runs
        return runs.take(np.repeat(np.arange(len(chunks), dtype=np.int32), counts))


class _Absent:
    """Marks a variant cell that is SQL NULL (not a variant null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


_ABSENT = _Absent()
_XID, _BEFORE, _AFTER = (next(i for i, (name, _t) in enumerate(CHANGES_COLUMNS) if name == n)
                         for n in ("xid", "before", "after"))


def _is_begin(ev: BinlogEvent, decoded: dict[str, Any] | None) -> bool:
    if ev.type_code not in (et.QUERY, et.MARIA_QUERY_COMPRESSED) or decoded is None:
        return False
    return bool(_BEGIN_RE.match(decoded["query"]))


def _is_end_query(decoded: dict[str, Any]) -> bool:
    return bool(_END_RE.match(decoded["query"]))


class _FileReader:
    """Reads one split of one opened file into the output rows of its view."""

    def __init__(self, bf: BinlogFile, path: str, start: int, end: int | None, options: BinlogReadOptions,
                 predicates: Sequence[Predicate]) -> None:
        self.bf = bf
        self.path = path
        self.start = start
        self.end = end
        self.options = options
        self.mode = options.common.mode
        self.events_view = options.view == "events"
        self.include_query = options.include_query
        self._table_map_cache: dict[bytes, TableMap] = {}
        self._encode_rows_event = rows_encoder()
        self.filters = _Filters(options, predicates)
        self.out = _Output(path, options, predicates)
        fde = bf.fde
        self.table_id_size = 4 if fde.post_header_len(et.TABLE_MAP, 8) == 6 else 6
        self.query_post_header = fde.post_header_len(et.QUERY, 13)
        self._reset_group()

    # -- transaction state ------------------------------------------------------------------------------------
    def _reset_group(self) -> None:
        self.gtid: str | None = None
        self.table_maps: dict[int, Any] = {}
        self.annotate: str | None = None
        self.pending: list[tuple[list[Any], EncodedRows, int]] = []  # changes waiting for their XID
        self.pending_rows = 0
        self.pending_bytes = 0
        self.known_xid: tuple[int | None] | None = None  # set by a look-ahead: (xid,) or (None,)
        self.after_gtid_statement = False

    def _flush_pending(self, xid: int | None) -> None:
        for values, rows, _size in self.pending:
            values[_XID] = xid
            self.out.add_changes(values, rows, _BEFORE, _AFTER)
        self.pending = []
        self.pending_rows = 0
        self.pending_bytes = 0

    def _end_transaction(self, xid: int | None) -> None:
        self._flush_pending(xid)
        self.known_xid = None

    # -- errors -------------------------------------------------------------------------------------------------
    def _bad(self, pos: int, next_pos: int | None, error: CorruptDataError) -> None:
        self.mode.handle(error, lambda e: self.out.add_corrupt(pos, next_pos, str(e)))

    # -- decoding helpers ---------------------------------------------------------------------------------------
    def _decode_query(self, ev: BinlogEvent) -> dict[str, Any]:
        return decode_query(ev.body, compressed=ev.type_code == et.MARIA_QUERY_COMPRESSED, path=self.path,
                            offset=ev.pos + HEADER_LEN, post_header_len=self.query_post_header,
                            max_uncompressed=self.options.max_uncompressed)

    def _decode_table_map(self, ev: BinlogEvent) -> TableMap:
        """The TABLE_MAP of ``ev``; every statement logs one, mostly the same bytes as the last time for that table,
        so decoded maps (and the row plans cached on them) are kept by their event bytes."""
        key = bytes(ev.body)
        table_map = self._table_map_cache.get(key)
        if table_map is None:
            table_map = decode_table_map(ev.body, table_id_size=self.table_id_size, path=self.path, offset=ev.pos)
            if len(self._table_map_cache) >= TABLE_MAP_CACHE_SIZE:
                self._table_map_cache.clear()
            self._table_map_cache[key] = table_map
        return table_map

    def _encode_rows(self, ev: BinlogEvent) -> EncodedRows:
        return self._encode_rows_event(
            ev.type_code, ev.body, post_header_len=self.bf.fde.post_header_len(ev.type_code, 10),
            table_id_size=self.table_id_size, table_maps=self.table_maps, path=self.path, offset=ev.pos,
            row_format=self.options.row_format, max_uncompressed=self.options.max_uncompressed)

    def _table_map_of(self, ev: BinlogEvent) -> TableMap:
        table_id = peek_table_id(ev.body, table_id_size=self.table_id_size, path=self.path, offset=ev.pos)
        table_map = self.table_maps.get(table_id)
        if table_map is None:
            raise CorruptDataError(self.path, ev.pos, f"rows event for table id {table_id} has no TABLE_MAP in its "
                                                      "transaction (file or split starting inside a transaction?)")
        return table_map

    # -- the walk -----------------------------------------------------------------------------------------------
    def run(self) -> Iterator[pa.RecordBatch]:
        bf = self.bf
        stop_pos = self.options.stop_position
        split_end = self.end
        if self.start <= 0:
            walk = bf.events(0)
            skipping = False
        else:
            walk = bf.events(bf.resync(self.start))
            skipping = True
        # The previous walked event: its type (-1 for a bad byte range, None before the first) and position.
        prev_type: int | None = None
        prev_pos = -1
        end_bound: int | None = None
        for item in walk:
            pos = item.pos
            if stop_pos is not None and pos >= stop_pos:
                break
            past_end = split_end is not None and pos >= split_end
            if past_end and end_bound is None:
                end_bound = bf.resync(split_end)
            if skipping and past_end:
                return  # no sync point in this split: the previous split reads on to the next one
            if isinstance(item, FramingError):
                if not skipping:
                    self._bad(pos, item.next_pos, item.error)
                prev_type, prev_pos = -1, pos
                if self.out.full():
                    yield from self._emit()
                continue
            if item.type_code not in et.EVENT_TYPE_NAMES and item.flags & et.FLAG_IGNORABLE:
                continue  # unknown, and its writer says it may be ignored (Aurora padding, type 100)
            decoded_query = None
            if item.type_code in (et.QUERY, et.MARIA_QUERY_COMPRESSED):
                try:
                    decoded_query = self._decode_query(item)
                except CorruptDataError as exc:
                    if not skipping:
                        self._bad(pos, item.next_pos, exc)
                    prev_type, prev_pos = item.type_code, pos
                    continue
            is_gtid = item.type_code in _GROUP_TYPES
            is_begin = _is_begin(item, decoded_query)
            begin_after_walked = is_begin and prev_type is not None and prev_type not in _GROUP_TYPES
            if skipping:
                if not (is_gtid or begin_after_walked):
                    prev_type, prev_pos = item.type_code, pos
                    continue
                skipping = False
            elif past_end and (is_gtid or (begin_after_walked and prev_pos >= end_bound)):
                break  # the first sync point of the next split
            if is_gtid or (is_begin and prev_type not in _GROUP_TYPES):
                self._end_transaction(None)
                self._reset_group()
            prev_type, prev_pos = item.type_code, pos
            try:
                self._process(item, decoded_query)
            except EncryptedBinlogError as exc:
                self._bad(pos, bf.size, exc)
                break
            except CorruptDataError as exc:
                self._bad(pos, item.next_pos, exc)
            if self.out.full():
                yield from self._emit()
        self._end_transaction(None)
        yield from self._emit()

    def _emit(self) -> Iterator[pa.RecordBatch]:
        for batch in self.out.batches():
            if len(batch):
                yield batch

    # -- one event ----------------------------------------------------------------------------------------------
    def _process(self, ev: BinlogEvent, decoded_query: dict[str, Any] | None, inner: bool = False) -> None:
        code = ev.type_code
        if code not in et.EVENT_TYPE_NAMES and ev.flags & et.FLAG_IGNORABLE:
            return  # unknown, and its writer says it may be ignored (Aurora padding, type 100)
        if code in et.ROWS_TYPES:
            self._rows_event(ev)
            return
        if not self.events_view and code not in _STATE_TYPES:
            return
        database = table = query = None
        data: Any
        gtid_after: str | bool | None = False  # False: keep; else the gtid after this event
        xid_end: tuple[int | None] | None = None
        if code in (et.QUERY, et.MARIA_QUERY_COMPRESSED):
            data = decoded_query if decoded_query is not None else self._decode_query(ev)
            database, query = data["schema"] or None, data["query"]
            if not inner and _is_end_query(data):
                xid_end = (None,)
            elif not inner and self.after_gtid_statement and not _BEGIN_RE.match(query):
                gtid_after = None  # a DDL / standalone statement: its GTID covers only it
            self.after_gtid_statement = False
        elif code == et.TABLE_MAP:
            table_map = self._decode_table_map(ev)
            self.table_maps[table_map.table_id] = table_map
            database, table = table_map.database, table_map.table
            data = {"table_id": table_map.table_id, "flags": table_map.flags, "database": database, "table": table,
                    "columns": [{"name": c.name, "type": c.type, "real_type": c.real_type, "meta": c.meta,
                                 "nullable": c.nullable, "unsigned": c.unsigned, "charset": c.charset}
                                for c in table_map.columns],
                    "primary_key": list(table_map.primary_key) if table_map.primary_key is not None else None}
        elif code == et.TRANSACTION_PAYLOAD:
            self._payload(ev)
            return
        elif code == et.FORMAT_DESCRIPTION:
            data = self.bf.fde.as_dict()
        else:
            if code == et.MARIA_START_ENCRYPTION or self.events_view or code in _STATE_TYPES:
                data = decode_event_body(code, ev.body, fde=self.bf.fde, server_id=ev.server_id, log_pos=ev.log_pos,
                                         path=self.path, offset=ev.pos, max_uncompressed=self.options.max_uncompressed)
            else:
                data = {}
            if code in _GROUP_TYPES:
                self.gtid = data.get("gtid")
                self.after_gtid_statement = True
            elif code == et.XID:
                xid_end = (data["xid"],)
            elif code == et.XA_PREPARE:
                xid_end = (None,)
            elif code in (et.ROWS_QUERY, et.MARIA_ANNOTATE_ROWS):
                self.annotate = query = data["query"]
        if ev.inner_index is not None:
            data = {**data, "payload_index": ev.inner_index}
        if self.events_view:
            type_name = et.event_type_name(code)
            if self.filters.facts_ok(ev, type_name, database, table, None):
                self.out.add((None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, type_name, code, ev.event_size,
                              ev.flags, self.gtid, database, table, query, data, None))
        if xid_end is not None:
            self._end_transaction(xid_end[0])
            self.gtid = None
            self.annotate = None
        elif gtid_after is not False:
            self.gtid = gtid_after

    def _rows_event(self, ev: BinlogEvent) -> None:
        table_map = self._table_map_of(ev)
        op = et.ROWS_EVENT_OPS[ev.type_code]
        type_name = et.event_type_name(ev.type_code)
        if not self.filters.facts_ok(ev, type_name, table_map.database, table_map.table, op):
            return
        rows = self._encode_rows(ev)
        if self.events_view:
            data = {"table_id": rows.table_id, "flags": rows.flags, "op": op, "rows": rows.n}
            if ev.inner_index is not None:
                data["payload_index"] = ev.inner_index
            self.out.add((None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, type_name, ev.type_code,
                          ev.event_size, ev.flags, self.gtid, table_map.database, table_map.table, self.annotate,
                          data, None))
            return
        xid: int | None = None
        buffer = self.known_xid is None
        too_much = (self.pending_rows + rows.n > MAX_PENDING_ROWS
                    or self.pending_bytes + ev.event_size > MAX_PENDING_BYTES)
        if buffer and too_much and ev.inner_index is None:
            self.known_xid = (self._look_ahead_xid(ev.next_pos),)
            self._flush_pending(self.known_xid[0])
            buffer = False
        if not buffer:
            xid = self.known_xid[0]  # type: ignore[index]
        values = [None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, self.gtid, xid, table_map.database,
                  table_map.table, op, None, None, None, self.annotate if self.include_query else None, None]
        if buffer:
            self.pending.append((values, rows, ev.event_size))
            self.pending_rows += rows.n
            self.pending_bytes += ev.event_size
        else:
            self.out.add_changes(values, rows, _BEFORE, _AFTER)

    def _look_ahead_xid(self, pos: int) -> int | None:
        """The XID ending the current transaction, found by walking on from ``pos`` (None if it has none)."""
        stop = self.options.stop_position
        for item in self.bf.events(pos):
            if isinstance(item, FramingError) or (stop is not None and item.pos >= stop):
                return None
            code = item.type_code
            if code == et.XID:
                return int.from_bytes(item.body[:8], "little")
            if code in _GROUP_TYPES or code == et.XA_PREPARE:
                return None
            if code in (et.QUERY, et.MARIA_QUERY_COMPRESSED):
                try:
                    query = self._decode_query(item)
                except CorruptDataError:
                    return None
                if _is_end_query(query) or _BEGIN_RE.match(query["query"]):
                    return None
        return None

    def _payload(self, ev: BinlogEvent) -> None:
        header = decode_payload_header(ev.body, path=self.path, offset=ev.pos + HEADER_LEN)
        payload = uncompress_payload(ev.body, header, path=self.path, offset=ev.pos + HEADER_LEN,
                                     max_size=self.options.max_uncompressed)
        inner = list(iter_payload_events(payload, path=self.path, offset=ev.pos))
        if self.events_view:
            type_name = et.event_type_name(ev.type_code)
            if self.filters.facts_ok(ev, type_name, None, None, None):
                data = {"compression_type": header.compression_type, "payload_size": header.payload_size,
                        "uncompressed_size": header.uncompressed_size, "events": len(inner)}
                self.out.add((None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, type_name, ev.type_code,
                              ev.event_size, ev.flags, self.gtid, None, None, None, data, None))
        if self.known_xid is None:
            for head, body in inner:
                if head[1] == et.XID and len(body) >= 8:
                    self._flush_pending_known(int.from_bytes(body[:8], "little"))
                    break
        for index, (head, body) in enumerate(inner):
            inner_event = BinlogEvent(ev.pos, ev.next_pos, head[0], head[1], head[2], head[3], head[4], head[5],
                                      body, index)
            try:
                query = self._decode_query(inner_event) if head[1] in (et.QUERY, et.MARIA_QUERY_COMPRESSED) else None
                self._process(inner_event, query, inner=True)
            except EncryptedBinlogError:
                raise
            except CorruptDataError as exc:
                self._bad(ev.pos, ev.next_pos, exc)

    def _flush_pending_known(self, xid: int) -> None:
        self.known_xid = (xid,)
        self._flush_pending(xid)


def iter_file_batches(source: Any, path: str, *, start: int = 0, end: int | None = None,
                      options: BinlogReadOptions | None = None,
                      predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
    """The record batches of the split ``[start, end)`` of one binlog (see the module docstring).

    ``source``: a seekable binary file (``pyarrow.NativeFile``, Python file), the file's bytes, or None to open
    ``path``. ``.gz`` files are read whole by the split at offset 0 (other splits of them are empty).
    """
    options = options or BinlogReadOptions()
    if start > 0 and source is not None and not isinstance(source, bytes | bytearray | memoryview) \
            and is_gzip(source, path):
        return  # a gzipped binlog is read whole by the split at offset 0 (byte offsets are of the compressed file)
    try:
        bf = BinlogFile(source, path, verify_checksums=options.common.verify_checksums)
    except CorruptDataError as exc:
        if start > 0:
            return  # the split at the head reports it
        reader_out = _Output(path, options, predicates)
        options.common.mode.handle(exc, lambda e: reader_out.add_corrupt(e.offset, None, str(e)))
        yield from (b for b in reader_out.batches() if len(b))
        return
    try:
        if bf.is_gzip:
            if start > 0:
                return
            end = None  # split offsets count compressed bytes: the whole inflated file belongs to split 0
        yield from _FileReader(bf, path, start, end, options, predicates).run()
    finally:
        bf.close()


def find_split_start(source: Any, path: str, offset: int, *, verify_checksums: bool = True) -> int | None:
    """The position of the first event the split starting at ``offset`` reads (None: the split is empty).

    For tests and planning diagnostics; :func:`iter_file_batches` applies the same rule while reading.
    """
    options = BinlogReadOptions(view="events", common=CommonOptions(mode=ParseMode.DROPMALFORMED,
                                                                    verify_checksums=verify_checksums))
    for batch in iter_file_batches(source, path, start=offset, end=None, options=options):
        if len(batch):
            return batch.column("pos")[0].as_py()
    return None
