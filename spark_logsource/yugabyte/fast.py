"""Both views through the C kernel (``_kernel.c``): rows built in C, record batches from its buffers.

The kernel is the twin of ``messages.py`` + ``proto.py`` (entry batches decoded, ``details`` written as a Variant),
of ``docdb.py`` (the writes view's pairs, ``doc_key`` and ``value`` written as Variants, ``_kernel_writes.c``)
and of ``reader.py``'s superseded queue and batch cutting, with ``valueFormat=variant``
(``docs/formats/yugabyte-wal.md``, "Rows"). The writes view needs the tablet's schemas: the reader's
:class:`~spark_logsource.yugabyte.catalog.SchemaCatalog` is handed to the kernel whenever it changed
(:meth:`FastBuilder.sync`), and the kernel leaves every batch with a schema change to the reference, which
teaches the catalog. It walks the entry batches of a segment until one it does not take
whole: a framing problem, or a body it leaves to the reference (``_kernel.h`` lists which). That one batch then
goes through :class:`~spark_logsource.yugabyte.segment.EntryScanner` and ``decode_batch`` exactly as without the
kernel, its rows (or its corrupt-record row, or its error) handed to the same C builder, so rows, errors and their
offsets are the reference's. ``SPARK_LOGSOURCE_PURE_PYTHON=1`` selects the reference for everything.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from spark_logsource.arrow.columns import variant_type
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.native import load_kernel
from spark_logsource.yugabyte.catalog import SchemaCatalog
from spark_logsource.yugabyte.messages import BatchRecord, EntryRecord, kernel_specs
from spark_logsource.yugabyte.segment import EntryScanner

__all__ = ["FastBuilder", "fast_kernel", "read_entries_fast"]

#: Bytes of a segment handed to the kernel per call (a batch crossing the end is taken by the reference step).
FAST_CHUNK = 4 << 20
_TS = pa.timestamp("us", tz="UTC")
_ready: set[int] = set()


def fast_kernel(view: str, value_format: str) -> ModuleType | None:
    """The kernel module for a read of ``view`` in ``value_format``, or None (the reference reads it)."""
    if view not in ("operations", "writes") or value_format != "variant":
        return None
    kernel = load_kernel("spark_logsource.yugabyte._kernel")
    if kernel is not None and id(kernel) not in _ready:
        kernel.set_specs(*kernel_specs())
        _ready.add(id(kernel))
    return kernel


class _Segment(Protocol):
    path: str
    seqno: int | None


def _nbytes(value: str | None) -> int:
    return 0 if value is None else len(value.encode())


class FastBuilder:
    """The rows of one read, held by the kernel's Builder; the same interface as reader.py's _Builder where the
    reader calls it, plus the superseded queue (which the reference keeps in the tablet reader)."""

    def __init__(self, kernel: ModuleType, schema: pa.Schema, batch_size: int, max_bytes: int,
                 corrupt_column: str | None, include_superseded: bool, max_pending: int,
                 predicates: Sequence[Predicate], writes: bool = False,
                 index_range: tuple[int | None, int | None] = (None, None)) -> None:
        self.schema = schema
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self.corrupt_column = corrupt_column
        self.predicates = predicates
        self.table_id: str | None = None
        self.tablet_id: str | None = None
        self.writes = writes
        self.cb = kernel.Builder(include_superseded, max_pending, corrupt_column is not None, writes, *index_range)
        self._stamp: int | None = None
        self._catalogs: dict[tuple[Any, ...], tuple[list[Any], list[Any], int | None]] = {}
        self._contexts: list[tuple[str, int | None, str | None, str | None]] = []
        self._seen: dict[tuple[str, int | None, str | None, str | None], int] = {}

    def context(self, seg: _Segment) -> int:
        """The kernel's number for the rows of ``seg`` in the tablet being read (file, seqno, table, tablet)."""
        key = (seg.path, seg.seqno, self.table_id, self.tablet_id)
        ctx = self._seen.get(key)
        if ctx is None:
            ctx = self._seen[key] = self.cb.add_context(_nbytes(seg.path) + _nbytes(self.table_id)
                                                        + _nbytes(self.tablet_id))
            self._contexts.append(key)
        return ctx

    def add_batch(self, seg: _Segment, offset: int, batch: BatchRecord, catalog: SchemaCatalog,
                  write_cols: Callable[[EntryRecord], dict[str, list[Any]] | None]) -> None:
        """The entries of a batch the reference decoded (reader.py _add's order: the schema learnt, supersede,
        append, release); ``write_cols`` gives an entry's writes columns with the catalog as it stands."""
        ctx = self.context(seg)
        for e in batch.entries:
            if e.schema is not None:
                catalog.add(e.schema, e.schema_version)
            committed = e.committed_index
            if batch.committed_op_id is not None:
                committed = max(committed or 0, batch.committed_op_id[1])
            if self.writes:
                self.add_writes(seg, offset, e, write_cols(e), committed)
                continue
            value, metadata = encode_variant(e.details)
            self.cb.add_entry(ctx, offset, e.entry_in_batch, e.term, e.index, e.hybrid_time, e.op_type,
                              e.committed_term, e.committed_index, e.transaction_id, e.transaction_status, value,
                              metadata, committed)

    def sync(self, catalog: SchemaCatalog) -> None:
        """Hand the tablet's schemas to the kernel when they changed since the last call (the writes view)."""
        if not self.writes or catalog.stamp == self._stamp:
            return
        versions = list(catalog.versions.values())
        tables = versions + [t for t in (catalog.current,) if t is not None and not any(t is v for v in versions)]
        key = (tuple(map(id, tables)), len(versions), None if catalog.current is None else id(catalog.current))
        hit = self._catalogs.get(key)
        if hit is None:
            # the tables are kept with their tuples: their ids in the key stay theirs
            schemas = [(t.version, i < len(versions),
                        sorted((c.id, c.name, c.type == "BINARY") for c in t.by_id.values()),
                        list(t.hash_columns), list(t.range_columns),
                        [(c.name, c.type == "BINARY", -1 if c.size is None else c.size) for c in t.packed_columns])
                       for i, t in enumerate(tables)]
            current = next((i for i, t in enumerate(tables) if t is catalog.current), None)
            if len(self._catalogs) >= 64:
                self._catalogs.clear()
            hit = self._catalogs[key] = (tables, schemas, current)
        self.cb.set_catalog(hit[1], hit[2])
        self._stamp = catalog.stamp

    def add_writes(self, seg: _Segment, offset: int, entry: EntryRecord, cols: dict[str, list[Any]] | None,
                   committed: int | None) -> None:
        """One entry the reference decoded, with its writes columns (docdb.decode_pairs; None: no rows)."""
        rows = []
        if cols:
            for i, (key, value, kind) in enumerate(zip(cols["doc_key"], cols["value"], cols["kind"], strict=True)):
                kv, km = (None, None) if key is None else encode_variant(key)
                vv, vm = (None, None) if value is None and kind in (None, "liveness", "delete_row", "set_null") \
                    else encode_variant(value)
                raw_key, raw_value = entry.pairs[i]
                rows.append((cols["pair_index"][i], cols["column_id"][i], cols["column_name"][i], kind,
                             cols["is_tombstone"][i], cols["schema_version"][i], cols["decode_error"][i], kv, km,
                             vv, vm, bytes(raw_key), bytes(raw_value)))
        ht = entry.hybrid_time
        self.cb.add_writes(self.context(seg), offset, entry.term, entry.index,
                           None if ht is None or ht >= 1 << 63 else ht, entry.transaction_id, committed, rows)

    def add_corrupt(self, seg: _Segment, offset: int, message: str) -> None:
        self.cb.add_corrupt(self.context(seg), offset, message)

    def full_batches(self) -> Iterator[pa.RecordBatch]:
        """The batches that are due; the rest stay held."""
        yield from self._take(False)

    def flush(self) -> Iterator[pa.RecordBatch]:
        yield from self._take(True)

    def _take(self, final: bool) -> Iterator[pa.RecordBatch]:
        while True:
            parts = self.cb.take(self.batch_size, self.max_bytes, final)
            if parts is None:
                return
            made = self._writes_batch(parts) if self.writes else self._batch(parts)
            batch = apply_predicates(made, self.predicates, corrupt_column=self.corrupt_column)
            if len(batch):
                yield batch

    def _context_columns(self, ctx: pa.Buffer, n: int) -> list[pa.Array]:
        """file, segment_seqno, table_id, tablet_id of each row, from the contexts this batch's rows use."""
        numbers = np.frombuffer(ctx, np.int32, n)
        used, rows = np.unique(numbers, return_inverse=True)
        contexts = [self._contexts[i] for i in used.tolist()]
        index_of = pa.array(rows.astype(np.int32))
        return [pa.array([c[k] for c in contexts], kind).take(index_of)
                for k, kind in ((0, pa.string()), (1, pa.int64()), (2, pa.string()), (3, pa.string()))]

    def _batch(self, parts: tuple[Any, ...]) -> pa.RecordBatch:
        """A record batch of the output schema from the kernel's buffers (_kernel.c Builder_take's order)."""
        n = parts[0]
        (ctx, offset, entry, term, index, ht, phys, logical, cterm, cindex, superseded,
         v_entry, v_term, v_index, v_ht, v_cterm, v_cindex) = (pa.py_buffer(b) for b in parts[1:18])
        op_type, txn, status, message, value, metadata = parts[18:]

        def num(kind: pa.DataType, data: pa.Buffer, valid: pa.Buffer | None) -> pa.Array:
            return pa.Array.from_buffers(kind, n, [valid, data])

        def text(kind: pa.DataType, triple: tuple[bytes, bytes, bytes], nullable: bool = True) -> pa.Array:
            offsets, data, valid = (pa.py_buffer(b) for b in triple)
            return pa.Array.from_buffers(kind, n, [valid if nullable else None, offsets, data])

        files, seqnos, tables, tablets = self._context_columns(ctx, n)
        details = pa.Array.from_buffers(variant_type(), n, [v_entry],
                                        children=[text(pa.binary(), value, False), text(pa.binary(), metadata, False)])
        arrays = [files, num(pa.int64(), offset, None), tables, tablets, seqnos,
                  num(pa.int32(), entry, v_entry), num(pa.int64(), term, v_term), num(pa.int64(), index, v_index),
                  num(pa.int64(), ht, v_ht), num(_TS, phys, v_ht), num(pa.int64(), logical, v_ht),
                  text(pa.string(), op_type), num(pa.int64(), cterm, v_cterm), num(pa.int64(), cindex, v_cindex),
                  text(pa.string(), txn), text(pa.string(), status), num(pa.bool_(), superseded, v_entry), details]
        if self.corrupt_column is not None:
            arrays.append(text(pa.string(), message))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


    def _writes_batch(self, parts: tuple[Any, ...]) -> pa.RecordBatch:
        """A record batch of the writes schema from the kernel's buffers (_kernel_tables.c yb_take_writes)."""
        n = parts[0]
        (ctx, offset, term, index, ht, phys, pair, colid, sv, superseded, tomb, v_row, v_term, v_index, v_ht, v_pair,
         v_colid, v_tomb, v_sv) = (pa.py_buffer(b) for b in parts[1:20])
        (txn, name, kind, error, key_v, key_m, value_v, value_m, raw_key, raw_value,
         message) = [tuple(pa.py_buffer(b) for b in triple) for triple in parts[20:]]

        def num(kind: pa.DataType, data: pa.Buffer, valid: pa.Buffer | None) -> pa.Array:
            return pa.Array.from_buffers(kind, n, [valid, data])

        def text(kind: pa.DataType, triple: tuple[pa.Buffer, ...], nullable: bool = True) -> pa.Array:
            return pa.Array.from_buffers(kind, n, [triple[2] if nullable else None, triple[0], triple[1]])

        def variant(value: tuple[pa.Buffer, ...], metadata: tuple[pa.Buffer, ...]) -> pa.Array:
            return pa.Array.from_buffers(variant_type(), n, [value[2]],
                                         children=[text(pa.binary(), value, False), text(pa.binary(), metadata, False)])

        files, seqnos, tables, tablets = self._context_columns(ctx, n)
        arrays = [files, num(pa.int64(), offset, None), tables, tablets, seqnos,
                  num(pa.int64(), term, v_term), num(pa.int64(), index, v_index), num(pa.int64(), ht, v_ht),
                  num(_TS, phys, v_ht), text(pa.string(), txn), num(pa.bool_(), superseded, v_row),
                  num(pa.int32(), pair, v_pair), variant(key_v, key_m), num(pa.int32(), colid, v_colid),
                  text(pa.string(), name), text(pa.string(), kind), variant(value_v, value_m),
                  num(pa.bool_(), tomb, v_tomb), num(pa.int64(), sv, v_sv), text(pa.string(), error),
                  text(pa.binary(), raw_key), text(pa.binary(), raw_value)]
        if self.corrupt_column is not None:
            arrays.append(text(pa.string(), message))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def read_entries_fast(reader: Any, scanner: EntryScanner,
                      seg: _Segment) -> Generator[pa.RecordBatch, None, tuple[int, int | None, int | None]]:
    """The entries of one scanner's range: runs through the kernel, each batch it stops at through the reference
    step (``EntryScanner.step``, ``decode_batch``, the reader's ``_report`` and ``_add``). Returns the number of
    entries and their index range, for the footer check."""
    builder: FastBuilder = reader.builder
    cb = builder.cb
    ctx = builder.context(seg)
    window, limit, verify = scanner.window, scanner.limit, scanner.verify
    pos: int | None = scanner.start
    span = IndexSpan()
    while pos is not None:
        if pos < limit:
            builder.sync(reader.catalog)
            pos, n, lo, hi = cb.decode(window.get(pos, min(limit - pos, FAST_CHUNK)), pos, ctx, verify)
            if n:
                span.add(n, lo, hi)
                yield from builder.full_batches()
        item, pos = scanner.step(pos)
        if item is not None:
            span.add(*reader.reference_item(scanner, seg, item))
            yield from builder.full_batches()
    return span.entries, span.low, span.high


class IndexSpan:
    """How many entries a segment's walk met and their lowest and highest index (the footer check's figures)."""

    def __init__(self) -> None:
        self.entries = 0
        self.low: int | None = None
        self.high: int | None = None

    def add(self, entries: int, low: int | None, high: int | None) -> None:
        self.entries += entries
        if low is not None and high is not None:
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)
