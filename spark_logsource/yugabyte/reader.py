"""Read one tablet's WAL (its segments, in sequence order) as Arrow record batches.

Two views (``docs/formats/yugabyte-wal.md``, "Rows"):

- ``operations``: one row per ReplicateMsg: ``file, offset`` (its entry batch), ``table_id, tablet_id`` (from the
  ``table-<id>/tablet-<id>`` folders), ``segment_seqno``, ``entry_in_batch``, ``term, index``, ``hybrid_time``
  (raw) with ``physical_time`` and ``logical``, ``op_type``, ``committed_term, committed_index``,
  ``transaction_id``, ``transaction_status``, ``superseded`` and ``details`` (the rest of the message by name).
- ``writes``: one row per DocDB key/value pair of a WRITE_OP (:mod:`docdb` names the columns).

Raft truncation: an entry is *superseded* when a later entry of the tablet's log has the same or a lower index.
Entries are held in a small queue until that is known: an entry is final once a later entry says (by its
``committed_op_id``) that its index is committed, since Raft never truncates committed entries; what is left at
the end of the log is not superseded. Superseded entries are dropped unless ``includeSuperseded``.

With the C kernel built, both views in ``valueFormat=variant`` are read through it (``fast.py``: the same rows,
queue and batches; ``docs/formats/yugabyte-wal.md``, "The C kernel").

Bad data follows the parse mode (FAILFAST raises, PERMISSIVE gives a row with only ``file, offset, table_id,
tablet_id, segment_seqno`` and the corrupt-record column, DROPMALFORMED logs and skips); an encrypted segment is
always an error.
"""

from __future__ import annotations

import logging
import posixpath
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_logsource.arrow.batching import MAX_BATCH_BYTES, cut_batches
from spark_logsource.arrow.columns import variant_array, variant_field
from spark_logsource.arrow.jsontext import to_json
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.errors import CorruptDataError, DecodeError
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.framing import BadRange
from spark_logsource.io.fs import display_name, open_input, split_query
from spark_logsource.options import CommonOptions
from spark_logsource.yugabyte.catalog import SchemaCatalog
from spark_logsource.yugabyte.docdb import decode_pairs
from spark_logsource.yugabyte.fast import FastBuilder, IndexSpan, fast_kernel, read_entries_fast
from spark_logsource.yugabyte.messages import BatchRecord, EntryRecord, decode_batch, has_schema_change
from spark_logsource.yugabyte.segment import (
    EncryptedWalError,
    EntryScanner,
    RawBatch,
    SegmentInfo,
    open_segment,
    read_index_blocks,
    segment_window,
)

__all__ = ["VIEWS", "TabletRef", "WalReadOptions", "iter_tablet_batches", "tablet_ids_from_path", "wal_schema"]

log = logging.getLogger(__name__)

VIEWS = ("operations", "writes")
#: How the nested columns (details, doc_key, value) are given: Spark variants, or JSON text.
VALUE_FORMATS = ("variant", "json")
_NESTED = ("details", "doc_key", "value")
#: Entries held while waiting to learn whether a later entry supersedes them (then released as final).
MAX_PENDING = 100_000
_LOGICAL_BITS = 12
_INT64_MAX = (1 << 63) - 1
_TS = pa.timestamp("us", tz="UTC")

_HEAD_FIELDS = [
    pa.field("file", pa.string()), pa.field("offset", pa.int64()), pa.field("table_id", pa.string()),
    pa.field("tablet_id", pa.string()), pa.field("segment_seqno", pa.int64()),
]
_OP_FIELDS = [
    pa.field("entry_in_batch", pa.int32()), pa.field("term", pa.int64()), pa.field("index", pa.int64()),
    pa.field("hybrid_time", pa.int64()), pa.field("physical_time", _TS), pa.field("logical", pa.int64()),
    pa.field("op_type", pa.string()), pa.field("committed_term", pa.int64()),
    pa.field("committed_index", pa.int64()), pa.field("transaction_id", pa.string()),
    pa.field("transaction_status", pa.string()), pa.field("superseded", pa.bool_()),
]
_WRITE_FIELDS = [
    pa.field("term", pa.int64()), pa.field("index", pa.int64()), pa.field("hybrid_time", pa.int64()),
    pa.field("physical_time", _TS), pa.field("transaction_id", pa.string()), pa.field("superseded", pa.bool_()),
    pa.field("pair_index", pa.int32()), variant_field("doc_key"), pa.field("column_id", pa.int32()),
    pa.field("column_name", pa.string()), pa.field("kind", pa.string()), variant_field("value"),
    pa.field("is_tombstone", pa.bool_()), pa.field("schema_version", pa.int64()),
    pa.field("decode_error", pa.string()), pa.field("raw_key", pa.binary()), pa.field("raw_value", pa.binary()),
]


def wal_schema(view: str, corrupt_column: str | None, value_format: str = "variant") -> pa.Schema:
    """The Arrow schema of every batch of ``view``; ``corrupt_column`` only in PERMISSIVE mode."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    fields = list(_HEAD_FIELDS)
    fields += [*_OP_FIELDS, variant_field("details")] if view == "operations" else _WRITE_FIELDS
    if value_format == "json":
        fields = [pa.field(f.name, pa.string()) if f.name in _NESTED else f for f in fields]
    if corrupt_column is not None:
        fields.append(pa.field(corrupt_column, pa.string()))
    return pa.schema(fields)


@dataclass(frozen=True)
class WalReadOptions:
    view: str = "operations"
    include_superseded: bool = False
    common: CommonOptions = field(default_factory=CommonOptions)
    value_format: str = "variant"


@dataclass(frozen=True, slots=True)
class TabletRef:
    """One tablet's segments (``(uri, size)``, in sequence order) and its ids from the folder names."""

    table_id: str | None
    tablet_id: str | None
    segments: tuple[tuple[str, int], ...]
    #: Per segment, the byte range ``(start, end)`` of entry batches to read (streams); None: all of each.
    ranges: tuple[tuple[int, int | None], ...] | None = None


def tablet_ids_from_path(uri: str) -> tuple[str | None, str | None]:
    """``(table_id, tablet_id)`` from ``.../table-<id>/tablet-<id>/wal-N`` (None where the folders differ)."""
    path = split_query(display_name(uri))[0]
    tablet_dir = posixpath.dirname(path)
    table_dir = posixpath.dirname(tablet_dir)
    tablet = posixpath.basename(tablet_dir)
    table = posixpath.basename(table_dir)
    return (table[6:] if table.startswith("table-") else None,
            tablet[7:] if tablet.startswith("tablet-") else None)


def _json_pair(value: Any) -> tuple[str, None]:
    """JSON text of a nested value (the same shape as the variant's); paired like encode_variant's output."""
    return to_json(value), None


def _split_ht(ht: int | None) -> tuple[int | None, int | None, int | None]:
    """(raw as int64, physical microseconds, logical) of a hybrid time; None for absent or invalid values."""
    if ht is None or ht > _INT64_MAX:
        return None, None, None
    return ht, ht >> _LOGICAL_BITS, ht & ((1 << _LOGICAL_BITS) - 1)


@dataclass(slots=True)
class _Pending:
    """An entry waiting for its ``superseded`` flag, with the segment it came from."""

    seg: _SegmentCtx
    offset: int
    entry: EntryRecord | None  # None: a corrupt-record row (``error``), kept in order with the entries
    write_cols: dict[str, list[Any]] | None
    superseded: bool = False
    error: str | None = None


@dataclass(slots=True)
class _SegmentCtx:
    path: str
    seqno: int | None


def _nbytes(value: str | bytes | None) -> int:
    """Bytes ``value`` puts into an Arrow string or binary column (UTF-8 for text)."""
    if value is None:
        return 0
    if isinstance(value, str) and not value.isascii():
        return len(value.encode())
    return len(value)


def _nested_bytes(cell: tuple[Any, Any] | None) -> int:
    """Bytes of an encoded nested cell: a Variant's value and metadata, or JSON text."""
    return 0 if cell is None else _nbytes(cell[0]) + _nbytes(cell[1])


class _Rows:
    """Rows held as column lists, with the variable-width bytes of each: a chunk as
    :mod:`spark_logsource.arrow.batching` defines it, so the builder cuts batches by the same rule as the other
    formats (at most ``batchSize`` rows and :data:`~spark_logsource.arrow.batching.MAX_BATCH_BYTES`)."""

    __slots__ = ("cols", "n", "size", "sizes")

    def __init__(self, cols: dict[str, list[Any]], sizes: list[int]) -> None:
        self.cols = cols
        self.sizes = sizes
        self.n = len(sizes)
        self.size = sum(sizes)

    def row_bytes(self) -> list[int]:
        return self.sizes

    def rows(self, lo: int, hi: int) -> _Rows:
        return _Rows({name: values[lo:hi] for name, values in self.cols.items()}, self.sizes[lo:hi])


class _Builder:
    """Column lists for one view, cut into record batches of the output schema."""

    def __init__(self, options: WalReadOptions, predicates: Sequence[Predicate]) -> None:
        self.view = options.view
        self.table_id: str | None = None  # of the tablet being read (rows of several tablets share batches)
        self.tablet_id: str | None = None
        self.batch_size = options.common.batch_size
        # read when the builder is made, not bound at import: tests lower the cap to exercise it with small data
        self.max_bytes = MAX_BATCH_BYTES
        self.corrupt_column = options.common.corrupt_column_or_none
        self.schema = wal_schema(self.view, self.corrupt_column, options.value_format)
        self.encode = _json_pair if options.value_format == "json" else encode_variant
        self.names = [f.name for f in self.schema]
        self.predicates = predicates
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in self.names}
        self.sizes: list[int] = []
        self.n = 0
        self.bytes = 0

    def _head(self, path: str, offset: int, seqno: int | None, count: int, sizes: Sequence[int]) -> None:
        """The columns every row has, for ``count`` rows whose other variable-width bytes are ``sizes``."""
        c = self.cols
        c["file"].extend([path] * count)
        c["offset"].extend([offset] * count)
        c["table_id"].extend([self.table_id] * count)
        c["tablet_id"].extend([self.tablet_id] * count)
        c["segment_seqno"].extend([seqno] * count)
        if self.corrupt_column is not None:
            c[self.corrupt_column].extend([None] * count)
        head = _nbytes(path) + _nbytes(self.table_id) + _nbytes(self.tablet_id)
        row_sizes = [head + size for size in sizes]
        self.sizes.extend(row_sizes)
        self.bytes += sum(row_sizes)
        self.n += count

    def add_corrupt(self, path: str, offset: int, seqno: int | None, message: str) -> None:
        for name in self.names:
            if name not in ("file", "offset", "table_id", "tablet_id", "segment_seqno", self.corrupt_column):
                self.cols[name].append(None)
        self._head(path, offset, seqno, 1, [_nbytes(message) if self.corrupt_column is not None else 0])
        if self.corrupt_column is not None:
            self.cols[self.corrupt_column][-1] = message

    def add_entry(self, p: _Pending) -> None:
        e = p.entry
        assert e is not None  # _emit gives a corrupt-record row (no entry) to add_corrupt
        ht, phys, logical = _split_ht(e.hybrid_time)
        c = self.cols
        if self.view == "operations":
            details = self.encode(e.details)
            size = (_nbytes(e.op_type) + _nbytes(e.transaction_id) + _nbytes(e.transaction_status)
                    + _nested_bytes(details))
            self._head(p.seg.path, p.offset, p.seg.seqno, 1, [size])
            c["entry_in_batch"].append(e.entry_in_batch)
            c["term"].append(e.term)
            c["index"].append(e.index)
            c["hybrid_time"].append(ht)
            c["physical_time"].append(phys)
            c["logical"].append(logical)
            c["op_type"].append(e.op_type)
            c["committed_term"].append(e.committed_term)
            c["committed_index"].append(e.committed_index)
            c["transaction_id"].append(e.transaction_id)
            c["transaction_status"].append(e.transaction_status)
            c["superseded"].append(p.superseded)
            c["details"].append(details)
            return
        w = p.write_cols
        if not w:
            return
        n = len(w["pair_index"])
        encode = self.encode
        doc_keys = [None if v is None else encode(v) for v in w["doc_key"]]
        values = [None if v is None and k in (None, "liveness", "delete_row", "set_null") else encode(v)
                  for v, k in zip(w["value"], w["kind"], strict=True)]
        txn = _nbytes(e.transaction_id)
        sizes = [txn + _nbytes(name) + _nbytes(kind) + _nbytes(error) + _nested_bytes(key) + _nested_bytes(value)
                 + len(raw_key) + len(raw_value)
                 for name, kind, error, key, value, (raw_key, raw_value)
                 in zip(w["column_name"], w["kind"], w["decode_error"], doc_keys, values, e.pairs, strict=True)]
        self._head(p.seg.path, p.offset, p.seg.seqno, n, sizes)
        for name, value in (("term", e.term), ("index", e.index), ("hybrid_time", ht), ("physical_time", phys),
                            ("transaction_id", e.transaction_id), ("superseded", p.superseded)):
            c[name].extend([value] * n)
        for name in ("pair_index", "column_id", "column_name", "kind", "is_tombstone", "schema_version",
                     "decode_error"):
            c[name].extend(w[name])
        c["doc_key"].extend(doc_keys)
        c["value"].extend(values)
        c["raw_key"].extend(k for k, _ in e.pairs)
        c["raw_value"].extend(v for _, v in e.pairs)

    def full_batches(self) -> Iterator[pa.RecordBatch]:
        """The batches that are due (``batchSize`` rows or the byte cap reached); the rest stay held."""
        if self.n >= self.batch_size or self.bytes >= self.max_bytes:
            yield from self._cut(keep_last=True)

    def flush(self) -> Iterator[pa.RecordBatch]:
        """Every row held, as batches."""
        yield from self._cut(keep_last=False)

    def _cut(self, keep_last: bool) -> Iterator[pa.RecordBatch]:
        if not self.n:
            return
        held = _Rows(self.cols, self.sizes)
        self._reset()
        groups = list(cut_batches([held], self.batch_size, self.max_bytes))
        last = groups[-1][0] if len(groups[-1]) == 1 else None
        if keep_last and last is not None and last.n < self.batch_size and last.size < self.max_bytes:
            # a batch not yet full waits for the next rows
            groups.pop()
            self.cols, self.sizes, self.n, self.bytes = last.cols, last.sizes, last.n, last.size
        for group in groups:
            yield from self._batch(group)

    def _batch(self, group: list[_Rows]) -> Iterator[pa.RecordBatch]:
        cols = group[0].cols if len(group) == 1 else \
            {name: [v for part in group for v in part.cols[name]] for name in self.names}
        arrays = []
        for f in self.schema:
            values = cols[f.name]
            if f.name in _NESTED and f.type == pa.string():
                arrays.append(pa.array([None if v is None else v[0] for v in values], pa.string()))
            elif f.name in _NESTED:
                arrays.append(variant_array([None if v is None else v[0] for v in values],
                                            [None if v is None else v[1] for v in values]))
            else:
                arrays.append(pa.array(values, f.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        batch = apply_predicates(batch, self.predicates, corrupt_column=self.corrupt_column)
        if len(batch):
            yield batch


class _TabletReader:
    """State of one tablet's read: schemas seen, the queue of entries waiting for their superseded flag."""

    def __init__(self, tablet: TabletRef, options: WalReadOptions, builder: _Builder | FastBuilder,
                 index_range: tuple[int | None, int | None]) -> None:
        self.tablet = tablet
        self.options = options
        self.mode = options.common.mode
        self.builder = builder
        # the C kernel's builder keeps the superseded queue itself (fast.py)
        self.fast = builder if isinstance(builder, FastBuilder) else None
        self.catalog = SchemaCatalog()
        self.pending: deque[_Pending] = deque()
        self.low, self.high = index_range

    # ---- the superseded queue ----

    def _supersede_from(self, index: int) -> None:
        if self.fast is not None:
            self.fast.cb.supersede_from(index)
            return
        for p in self.pending:
            if p.entry is not None and not p.superseded and p.entry.index is not None and p.entry.index >= index:
                p.superseded = True

    def _release(self, committed: int | None, everything: bool = False) -> None:
        pending = self.pending
        while pending:
            p = pending[0]
            idx = None if p.entry is None else p.entry.index
            final = everything or p.superseded or idx is None or (committed is not None and idx <= committed) \
                or len(pending) > MAX_PENDING
            if not final:
                return
            pending.popleft()
            self._emit(p)

    def _emit(self, p: _Pending) -> None:
        builder = self.builder
        assert isinstance(builder, _Builder)  # the kernel's builder releases its rows itself
        if p.entry is None:
            builder.add_corrupt(p.seg.path, p.offset, p.seg.seqno, p.error or "")
            return
        if p.superseded and not self.options.include_superseded:
            return
        builder.add_entry(p)

    def _add(self, seg: _SegmentCtx, offset: int, batch: BatchRecord) -> None:
        if self.fast is not None:
            self.fast.add_batch(seg, offset, batch, self.catalog, self._write_cols)
            return
        for e in batch.entries:
            if e.index is not None:
                self._supersede_from(e.index)
            if e.schema is not None:
                self.catalog.add(e.schema, e.schema_version)
            write_cols = self._write_cols(e) if self.options.view == "writes" else None
            self.pending.append(_Pending(seg, offset, e, write_cols))
            committed = e.committed_index
            if batch.committed_op_id is not None:
                committed = max(committed or 0, batch.committed_op_id[1])
            self._release(committed)

    def _write_cols(self, e: EntryRecord) -> dict[str, list[Any]] | None:
        """The writes view's columns of an entry (None: it keeps no rows)."""
        if not e.pairs or not self._in_range(e.index):
            return None
        current = self.catalog.current
        return decode_pairs(e.pairs, current, self.catalog.version, None if current is None else current.version)

    def _in_range(self, index: int | None) -> bool:
        if index is None:
            return True
        return (self.low is None or index >= self.low) and (self.high is None or index <= self.high)

    # ---- segments ----

    def _report(self, seg: _SegmentCtx, offset: int, error: CorruptDataError) -> None:
        def keep(e: CorruptDataError) -> None:
            if self.fast is not None:
                self.fast.add_corrupt(seg, offset, str(e))
                return
            self.pending.append(_Pending(seg, offset, None, None, error=str(e)))
            self._release(None)

        self.mode.handle(error, keep)

    def read(self) -> Iterator[pa.RecordBatch]:
        """The tablet's rows (full batches only: the caller flushes the builder)."""
        self.builder.table_id, self.builder.tablet_id = self.tablet.table_id, self.tablet.tablet_id
        ranges = self.tablet.ranges or [None] * len(self.tablet.segments)
        for (uri, size), rng in zip(self.tablet.segments, ranges, strict=True):
            yield from self._read_segment(uri, size, rng)
        if self.fast is not None:
            self.fast.cb.release_all()
        else:
            self._release(None, everything=True)
        yield from self.builder.full_batches()

    def _read_segment(self, uri: str, size: int, rng: tuple[int, int | None] | None) -> Iterator[pa.RecordBatch]:
        path = display_name(uri)
        seg = _SegmentCtx(path, None)
        with open_input(uri) as source:
            window = segment_window(source, size)
            try:
                info = open_segment(source, path, size, window)
            except EncryptedWalError:
                raise
            except CorruptDataError as exc:
                self._report(seg, exc.offset or 0, exc)
                yield from self.builder.full_batches()
                return
            if info.kind == "uninitialized":
                log.info("%s: preallocated segment never initialised; skipped", path)
                return
            seg.seqno = info.sequence_number
            header = info.header or {}
            self.catalog.add(header.get("schema"), header.get("schema_version", 0))
            if rng is None and self._skip_by_footer(info):
                return
            if rng is not None and rng[0] > info.first_entry_offset:
                self._schemas_before(source, info, rng[0])
            yield from self._read_entries(source, info, seg, rng, window)

    def _skip_by_footer(self, info: SegmentInfo) -> bool:
        """Whether a closed segment's footer puts all its entries outside the wanted index range."""
        footer = info.footer
        if footer is None or (self.low is None and self.high is None):
            return False
        lo, hi = footer.get("min_replicate_index", -1), footer.get("max_replicate_index", -1)
        if lo < 0 or hi < 0:
            return False
        if (self.low is not None and hi < self.low) or (self.high is not None and lo > self.high):
            # Its first entry still supersedes every earlier entry of an index at least as high.
            self._supersede_from(lo)
            log.info("%s: index range [%d, %d] outside the request; segment not read", info.path, lo, hi)
            return True
        return False

    def _schemas_before(self, source: Any, info: SegmentInfo, pos: int) -> None:
        """Learn the schema changes of a segment's entries before ``pos`` (a stream resuming mid-segment)."""
        for item in EntryScanner(source, info, end=pos, verify_checksums=False):
            if isinstance(item, RawBatch) and has_schema_change(item.body):
                try:
                    batch = decode_batch(item.body)
                except DecodeError:
                    continue  # reported by the range that holds it
                for e in batch.entries:
                    if e.schema is not None:
                        self.catalog.add(e.schema, e.schema_version)

    def _read_entries(self, source: Any, info: SegmentInfo, seg: _SegmentCtx,
                      rng: tuple[int, int | None] | None = None, window: Any = None) -> Iterator[pa.RecordBatch]:
        start, end = rng if rng is not None else (None, None)
        scanner = EntryScanner(source, info, start=start or None, end=end,
                               verify_checksums=self.options.common.verify_checksums, window=window)
        if self.fast is not None:
            entries, low, high = yield from read_entries_fast(self, scanner, seg)
        else:
            entries, low, high = yield from self._walk(scanner, info, seg)
        if info.footer is not None and not scanner.had_corruption and rng is None:
            problem = footer_mismatch(info.footer, entries, low, high)
            if problem:
                self._report(seg, info.footer_offset or 0, CorruptDataError(info.path, info.footer_offset, problem))
                yield from self.builder.full_batches()

    def _walk(self, scanner: EntryScanner, info: SegmentInfo,
              seg: _SegmentCtx) -> Generator[pa.RecordBatch, None, tuple[int, int | None, int | None]]:
        """The reference walk of a scanner's batches: (entries, lowest index, highest index) for the footer check."""
        span = IndexSpan()
        for item in scanner:
            span.add(*self.reference_item(scanner, seg, item))
            yield from self.builder.full_batches()
        return span.entries, span.low, span.high

    def reference_item(self, scanner: EntryScanner, seg: _SegmentCtx,
                       item: Any) -> tuple[int, int | None, int | None]:
        """One framed item through the reference: a bad range or an undecodable batch reported, a batch's rows
        added; its (entries, lowest index, highest index)."""
        if isinstance(item, BadRange):
            self._report(seg, item.offset, item.error)
            return 0, None, None
        try:
            batch = decode_batch(item.body)
        except DecodeError as exc:
            scanner.had_corruption = True
            self._report(seg, item.offset, exc.at(scanner.path, item.offset + 12))
            return 0, None, None
        indexes = [e.index for e in batch.entries if e.index is not None]
        self._add(seg, item.offset, batch)
        return len(batch.entries), min(indexes, default=None), max(indexes, default=None)


def footer_mismatch(footer: dict[str, Any], entries: int, low: int | None, high: int | None) -> str | None:
    """Why a closed segment's footer disagrees with the entries read from it, or None."""
    expected = footer.get("num_entries")
    if expected is not None and expected != entries:
        return f"footer says {expected} entries, the segment holds {entries}"
    lo, hi = footer.get("min_replicate_index", -1), footer.get("max_replicate_index", -1)
    if entries and lo >= 0 and hi >= 0 and (lo, hi) != (low, high):
        return f"footer index range [{lo}, {hi}] but the entries span [{low}, {high}]"
    return None


def iter_tablet_batches(tablets: TabletRef | Sequence[TabletRef], options: WalReadOptions | None = None,
                        predicates: Sequence[Predicate] = (),
                        index_range: tuple[int | None, int | None] = (None, None)) -> Iterator[pa.RecordBatch]:
    """Batches of the rows of ``tablets``, each tablet's segments in log order (rows of several small tablets
    share batches); ``index_range``: inclusive bounds used to skip closed segments by their footers."""
    options = options if options is not None else WalReadOptions()
    kernel = fast_kernel(options.view, options.value_format)
    builder: _Builder | FastBuilder
    if kernel is None:
        builder = _Builder(options, predicates)
    else:
        corrupt = options.common.corrupt_column_or_none
        builder = FastBuilder(kernel, wal_schema(options.view, corrupt, options.value_format),
                              options.common.batch_size, MAX_BATCH_BYTES, corrupt, options.include_superseded,
                              MAX_PENDING, predicates, options.view == "writes", index_range)
    for tablet in [tablets] if isinstance(tablets, TabletRef) else tablets:
        yield from _TabletReader(tablet, options, builder, index_range).read()
    yield from builder.flush()


@dataclass
class SegmentWalk:
    """Everything one segment holds, batch by batch (for tools and tests; the views stream instead)."""

    info: SegmentInfo
    batches: list[tuple[int, BatchRecord]]
    bad: list[CorruptDataError]
    end_status: str | None
    end_offset: int | None
    end_message: str
    index_blocks: list[dict[str, Any]] = field(default_factory=list)


def walk_segment(uri: str, verify_checksums: bool = True) -> SegmentWalk:
    """Decode every entry batch of one segment; framing and decoding problems are collected in ``bad``."""
    path = display_name(uri)
    with open_input(uri) as source:
        info = open_segment(source, path)
        batches: list[tuple[int, BatchRecord]] = []
        bad: list[CorruptDataError] = []
        if info.kind == "uninitialized":
            return SegmentWalk(info, batches, bad, "uninitialized", 0, "preallocated, never initialised")
        scanner = EntryScanner(source, info, verify_checksums=verify_checksums)
        for item in scanner:
            if isinstance(item, BadRange):
                bad.append(item.error)
                continue
            try:
                batches.append((item.offset, decode_batch(item.body)))
            except DecodeError as exc:
                bad.append(exc.at(path, item.offset + 12))
        try:
            index_blocks = read_index_blocks(source, info)
        except CorruptDataError as exc:
            bad.append(exc)
            index_blocks = []
        return SegmentWalk(info, batches, bad, scanner.end_status, scanner.end_offset, scanner.end_message,
                           index_blocks)
