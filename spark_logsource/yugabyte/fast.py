"""The operations view through the C kernel (``_kernel.c``): rows built in C, record batches from its buffers.

The kernel is the twin of ``messages.py`` + ``proto.py`` (entry batches decoded, ``details`` written as a Variant)
and of ``reader.py``'s superseded queue and batch cutting, for ``view=operations`` with ``valueFormat=variant``
(``docs/formats/yugabyte-wal.md``, "Rows"). It walks the entry batches of a segment until one it does not take
whole: a framing problem, or a body it leaves to the reference (``_kernel.h`` lists which). That one batch then
goes through :class:`~spark_logsource.yugabyte.segment.EntryScanner` and ``decode_batch`` exactly as without the
kernel, its rows (or its corrupt-record row, or its error) handed to the same C builder, so rows, errors and their
offsets are the reference's. ``SPARK_LOGSOURCE_PURE_PYTHON=1`` selects the reference for everything.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from spark_logsource.arrow.columns import variant_type
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.native import load_kernel
from spark_logsource.yugabyte.messages import BatchRecord, kernel_specs
from spark_logsource.yugabyte.segment import EntryScanner

__all__ = ["FastBuilder", "fast_kernel", "read_entries_fast"]

#: Bytes of a segment handed to the kernel per call (a batch crossing the end is taken by the reference step).
FAST_CHUNK = 4 << 20
_TS = pa.timestamp("us", tz="UTC")
_ready: set[int] = set()


def fast_kernel(view: str, value_format: str) -> ModuleType | None:
    """The kernel module for a read of ``view`` in ``value_format``, or None (the reference reads it)."""
    if view != "operations" or value_format != "variant":
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
                 predicates: Sequence[Predicate]) -> None:
        self.schema = schema
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self.corrupt_column = corrupt_column
        self.predicates = predicates
        self.table_id: str | None = None
        self.tablet_id: str | None = None
        self.cb = kernel.Builder(include_superseded, max_pending, corrupt_column is not None)
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

    def add_batch(self, seg: _Segment, offset: int, batch: BatchRecord) -> None:
        """The entries of a batch the reference decoded (reader.py _add's order: supersede, append, release)."""
        ctx = self.context(seg)
        for e in batch.entries:
            committed = e.committed_index
            if batch.committed_op_id is not None:
                committed = max(committed or 0, batch.committed_op_id[1])
            value, metadata = encode_variant(e.details)
            self.cb.add_entry(ctx, offset, e.entry_in_batch, e.term, e.index, e.hybrid_time, e.op_type,
                              e.committed_term, e.committed_index, e.transaction_id, e.transaction_status, value,
                              metadata, committed)

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
            batch = apply_predicates(self._batch(parts), self.predicates, corrupt_column=self.corrupt_column)
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
