"""Rows of a view, collected as chunks and cut into Arrow record batches within a row and a byte limit.

A :class:`Chunk` is a run of rows sharing every column but the per-row ones (one rows event's changes, or one
single row); :class:`BatchBuilder` turns chunks into RecordBatches of at most ``batchSize`` rows and at most
:data:`MAX_BATCH_BYTES` of string and binary data (a statement repeated on thousands of rows, large BLOBs), with
the pushed predicates applied exactly.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from spark_logsource.arrow.batching import MAX_BATCH_BYTES, ChunkBuffer
from spark_logsource.arrow.columns import repeated_strings, string_column, variant_type
from spark_logsource.arrow.jsontext import to_json
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.mysql.encode.images import EncodedRows, ImageColumn, pack_images
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.schema import CHANGES_COLUMNS, EVENTS_COLUMNS, binlog_schema

__all__ = ["ABSENT", "AFTER", "BEFORE", "MAX_BATCH_BYTES", "XID", "BatchBuilder", "Chunk", "int_column", "join_cells",
           "join_parts"]

_INT32_MAX = 2**31 - 1
#: Constant columns kept for reuse by later batches (see BatchBuilder._constant).
_MAX_CONSTANTS = 32
#: ... each of at most this many bytes (a long statement repeated on every row is built per batch).
_MAX_CONSTANT_BYTES = 1 << 20
#: Batches of at most this many chunks build their columns of one value per chunk from those values directly.
_FEW_CHUNKS = 16


class _Absent:
    """Marks a variant cell that is SQL NULL (not a variant null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
XID, BEFORE, AFTER, POS = (next(i for i, (name, _t) in enumerate(CHANGES_COLUMNS) if name == n)
                              for n in ("xid", "before", "after", "pos"))


class Chunk:
    """Rows that share every column but the per-row ones: one rows event's changes, or one single row.

    ``values[i]`` is the value of column ``i`` for every row of the chunk, except for the per-row columns:
    ``row_index`` (``first_row`` .. ``first_row + n - 1``) and the variant columns, whose encoded cells are in
    ``encoded[i]``: an :class:`~.encode.images.ImageColumn` of ``n`` cells (Variant values and metadata, or JSON
    text, as Arrow column parts), or None when the column is SQL NULL on every row of the chunk. In a chunk of
    several rows events (``per_row``: a run, :mod:`.encode.runs`), the columns that vary by event (``pos``,
    ``next_pos``, ``timestamp``, ``server_id``, ``row_index``) are numpy arrays of ``n`` values instead. It is a
    chunk as :mod:`spark_logsource.arrow.batching` defines it, cut by ``cut_batches``.
    """

    __slots__ = ("encoded", "first_row", "json", "n", "per_row", "size", "values")

    def __init__(self, values: list[Any], n: int, encoded: dict[int, ImageColumn | None], json: bool,
                 first_row: int = 0, fixed: int | None = None) -> None:
        self.values = values
        self.n = n
        self.encoded = encoded
        self.json = json
        self.first_row = first_row
        self.per_row = len(values) > POS and isinstance(values[POS], np.ndarray)
        # string and binary bytes the chunk puts into a batch (what Arrow's 2 GiB per column limit counts)
        # ``fixed``: the string bytes of the shared columns, when the caller knows them
        size = n * (sum(len(v) for v in values if isinstance(v, str)) if fixed is None else fixed)
        for cells in encoded.values():
            if cells is not None:
                size += cells.size
        self.size = size

    def row_bytes(self) -> np.ndarray:
        """Bytes each row puts into the batch's string and binary columns (what the 2 GiB Arrow limit counts)."""
        fixed = sum(len(v) for v in self.values if isinstance(v, str))
        sizes = np.full(self.n, fixed, dtype=np.int64)
        for cells in self.encoded.values():
            if cells is not None:
                sizes += _cell_sizes(cells.ends, cells.n)
                if cells.meta_ends is not None:
                    sizes += _cell_sizes(cells.meta_ends, cells.n)
        return sizes

    def rows(self, lo: int, hi: int) -> Chunk:
        """The chunk of rows ``lo`` .. ``hi - 1``."""
        encoded = {i: None if cells is None else _slice_cells(cells, lo, hi) for i, cells in self.encoded.items()}
        values = self.values
        if self.per_row:
            values = [v[lo:hi] if isinstance(v, np.ndarray) else v for v in values]
        return Chunk(values, hi - lo, encoded, self.json, self.first_row + lo)


def _cell_sizes(ends: bytes, n: int) -> np.ndarray:
    """The byte length of each of ``n`` cells from their int32 end offsets."""
    sizes = np.frombuffer(ends, dtype="<i4", count=n).astype(np.int64)
    sizes[1:] -= sizes[:-1].copy()
    return sizes


def _slice_part(ends: bytes, data: bytes, lo: int, hi: int) -> tuple[bytes, bytes]:
    offsets = np.frombuffer(ends, dtype="<i4", count=hi)
    start = int(offsets[lo - 1]) if lo else 0
    stop = int(offsets[hi - 1]) if hi else 0
    return (offsets[lo:hi] - np.int32(start)).astype("<i4").tobytes(), data[start:stop]


def _slice_cells(cells: ImageColumn, lo: int, hi: int) -> ImageColumn:
    """Cells ``lo`` .. ``hi - 1`` of ``cells``."""
    ends, data = _slice_part(cells.ends, cells.data, lo, hi)
    if cells.meta_ends is None or cells.meta is None:
        return ImageColumn(hi - lo, ends, data)
    return ImageColumn(hi - lo, ends, data, *_slice_part(cells.meta_ends, cells.meta, lo, hi))


def join_parts(parts: list[tuple[int, bytes | None, bytes | None]]) -> tuple[pa.Buffer, pa.Buffer]:
    """Arrow offsets and data of ``(n, ends, data)`` parts back to back (None: ``n`` empty cells)."""
    total = sum(len(d) for _n, _e, d in parts if d)
    if total > _INT32_MAX:
        raise OverflowError(f"{total} bytes in one binary column exceed Arrow's 2 GiB")
    offsets = np.empty(sum(n for n, _e, _d in parts) + 1, dtype="<i4")
    offsets[0] = 0
    at = base = 0
    for n, ends, data in parts:  # each part's ends, moved by the bytes of the parts before it
        if ends is None:
            offsets[at + 1:at + 1 + n] = base
        else:
            np.add(np.frombuffer(ends, dtype="<i4", count=n), base, out=offsets[at + 1:at + 1 + n])
        at += n
        base += len(data) if data else 0
    joined = [d for _n, _e, d in parts if d]
    return pa.py_buffer(offsets), pa.py_buffer(joined[0] if len(joined) == 1 else b"".join(joined))


def join_cells(parts: list[tuple[int, ImageColumn | None]], json: bool) -> pa.Array:
    """One output column from the cells of consecutive chunks: ``(n, cells)``, None cells being ``n`` SQL NULLs.

    The Arrow buffers are the chunks' buffers joined (offsets rebased): no Python object per row.
    """
    n = sum(count for count, _cells in parts)
    validity = None
    nulls = sum(count for count, cells in parts if cells is None)
    if nulls:
        present = np.repeat(np.array([cells is not None for _n, cells in parts]), [count for count, _c in parts])
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    offsets, data = join_parts([(count, None if c is None else c.ends, None if c is None else c.data)
                                for count, c in parts])
    if json:
        return pa.Array.from_buffers(pa.string(), n, [validity, offsets, data], null_count=nulls)
    # the children of a null row hold empty bytes, so that they stay non-null as Spark's variant wants
    meta_offsets, meta = join_parts([(count, None if c is None else c.meta_ends, None if c is None else c.meta)
                                     for count, c in parts])
    value_array = pa.Array.from_buffers(pa.binary(), n, [None, offsets, data], null_count=0)
    metadata_array = pa.Array.from_buffers(pa.binary(), n, [None, meta_offsets, meta], null_count=0)
    return pa.Array.from_buffers(variant_type(), n, [validity], null_count=nulls,
                                 children=[value_array, metadata_array])


class BatchBuilder:
    """Chunks of the view being built, turned into RecordBatches of at most ``batch_size`` rows and at most
    :data:`MAX_BATCH_BYTES` of string and binary data (a statement repeated on thousands of rows, large BLOBs)."""

    def __init__(self, path: str, options: BinlogReadOptions, predicates: Sequence[Predicate]) -> None:
        self.path = path
        self.view = options.view
        self.json = options.row_format == "json"
        corrupt = options.common.corrupt_column_or_none
        self.corrupt_column = corrupt
        self.schema = binlog_schema(options.view, options.row_format, corrupt)
        self.columns = list(CHANGES_COLUMNS if options.view == "changes" else EVENTS_COLUMNS)
        if corrupt:
            self.columns.append(("_corrupt", pa.string()))
        self.variant_columns = [i for i, (_name, type_) in enumerate(self.columns) if type_ is None]
        self.row_index_column = next((i for i, (name, _t) in enumerate(self.columns) if name == "row_index"), None)
        strings = [i for i, (_name, type_) in enumerate(self.columns)
                   if type_ is not None and pa.types.is_string(type_)]
        self._strings = operator.itemgetter(*strings)
        self._counts: np.ndarray = np.zeros(0, dtype=np.int64)
        self._repeat: np.ndarray | None = None
        self._rows = 0
        self._constants: dict[tuple[int, Any, int], pa.Array] = {}
        self.batch_size = options.common.batch_size
        self.predicates = list(predicates)
        self.buffer: ChunkBuffer[Chunk] = ChunkBuffer(self.batch_size, MAX_BATCH_BYTES)

    def add(self, row: tuple[Any, ...]) -> None:
        """One row given cell by cell; variant cells are Python values (or ``ABSENT`` for SQL NULL)."""
        values = list(row) + [None] * (len(self.columns) - len(row))
        encoded: dict[int, ImageColumn | None] = {}
        for i in self.variant_columns:
            cell = values[i]
            if cell is ABSENT:
                encoded[i] = None
            elif self.json:
                encoded[i] = pack_images([to_json(cell)])
            else:
                value, metadata = encode_variant(cell)
                encoded[i] = pack_images([value], [metadata])
        self._append(Chunk(values, 1, encoded, self.json))

    def add_corrupt(self, pos: int | None, next_pos: int | None, message: str) -> None:
        """One corrupt-record row (PERMISSIVE): file, pos, next_pos and the message; everything else null."""
        row: list[Any] = [None] * len(self.columns)
        row[1], row[2] = pos, next_pos
        for i in self.variant_columns:
            row[i] = ABSENT
        row[-1] = message
        self.add(tuple(row))

    def add_changes(self, values: list[Any], rows: EncodedRows, before: int, after: int) -> None:
        """The rows of one rows event: ``values`` holds the shared columns, ``rows`` the encoded images."""
        fixed = sum(map(len, filter(None, self._strings(values))))
        self._append(Chunk(values, rows.n, {before: rows.before, after: rows.after}, self.json, 0, fixed))

    def _append(self, chunk: Chunk) -> None:
        self.buffer.add(chunk)

    def full(self) -> bool:
        return self.buffer.full()

    def batches(self, final: bool = True) -> Iterator[pa.RecordBatch]:
        """Everything added so far, as batches within the row and byte limits, with the predicates applied.

        ``final=False``: a last batch below both limits stays buffered for the next call (so a reader that emits
        whenever :meth:`full` says so makes full batches, not a full one and a small remainder each time).
        """
        last: list[Chunk] | None = None
        for group in self.buffer.take():
            if last is not None:
                yield from self._build(last)
            last = group
        if last is None:
            return
        if final or sum(c.n for c in last) >= self.batch_size or sum(c.size for c in last) >= self.buffer.max_bytes:
            yield from self._build(last)
        else:
            for chunk in last:  # the buffer is empty: take() emptied it and nothing is added while batches are cut
                self.buffer.add(chunk)

    def emit(self, final: bool = True) -> Iterator[pa.RecordBatch]:
        """Everything added so far, as non-empty batches (see :meth:`batches`)."""
        for batch in self.batches(final):
            if len(batch):
                yield batch

    def _build(self, chunks: list[Chunk]) -> Iterator[pa.RecordBatch]:
        counts = np.fromiter((c.n for c in chunks), dtype=np.int64, count=len(chunks))
        self._rows = int(counts.sum())
        self._repeat = None  # made when a column needs it (_repeat_index)
        self._counts = counts
        arrays = [self._column(i, chunks) for i in range(len(self.columns))]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self.predicates:
            batch = apply_predicates(batch, self.predicates, corrupt_column=self.corrupt_column)
        if len(batch):
            yield batch

    def _constant(self, i: int, value: Any, n: int) -> pa.Array:
        """Column ``i`` holding ``value`` on all ``n`` rows. Arrow arrays are immutable, so one is built once and
        shared by the batches that repeat it (the file, table and op of every batch of a run of one table)."""
        key = (i, value, n)
        array = self._constants.get(key)
        if array is None:
            type_ = self.columns[i][1]
            if type_ is None:  # a variant or JSON column of SQL NULLs
                assert value is None
                array = join_cells([(n, None)], self.json)
            elif value is None:
                array = pa.nulls(n, type_)
            elif pa.types.is_string(type_):
                array = string_column(value, n)
            elif pa.types.is_integer(type_) or pa.types.is_timestamp(type_):
                scale = 1_000_000 if self.columns[i][0] == "timestamp" else 1
                array = int_column(np.full(n, value * scale, dtype=np.int64), type_)
            else:
                array = pa.array([value], type_).take(np.zeros(n, dtype=np.int32))
            if array.nbytes <= _MAX_CONSTANT_BYTES:
                if len(self._constants) >= _MAX_CONSTANTS:
                    self._constants.clear()
                self._constants[key] = array
        return array

    def _per_row_column(self, i: int, chunks: list[Chunk]) -> pa.Array:
        """Column ``i`` of chunks some of which hold it per row (runs of rows events); integers only."""
        name, type_ = self.columns[i]
        parts: list[np.ndarray] = []
        null_ranges: list[tuple[int, int]] = []
        at = 0
        for c in chunks:
            value = c.values[i]
            if isinstance(value, np.ndarray):
                parts.append(value)
            elif i == self.row_index_column:
                parts.append(np.arange(c.first_row, c.first_row + c.n, dtype=np.int64))
            else:
                parts.append(np.full(c.n, 0 if value is None else value, dtype=np.int64))
                if value is None:
                    null_ranges.append((at, at + c.n))
            at += c.n
        values = parts[0].astype(np.int64, copy=False) if len(parts) == 1 else np.concatenate(parts, dtype=np.int64)
        mask = None
        if null_ranges:
            mask = np.zeros(at, dtype=bool)
            for lo, hi in null_ranges:
                mask[lo:hi] = True
        if name == "timestamp":
            values = values * 1_000_000
        return int_column(values, type_, mask)

    def _chunk_values(self, i: int, values: list[Any], counts: np.ndarray) -> pa.Array:
        """Column ``i`` from one string or integer value per chunk (None: SQL NULL), repeated ``counts`` times."""
        name, type_ = self.columns[i]
        assert type_ is not None
        present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        mask = None if present.all() else ~np.repeat(present, counts)
        if pa.types.is_string(type_):
            encoded = [b"" if v is None else str(v).encode("utf-8") for v in values]
            sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            if int(sizes @ counts) > _MAX_CONSTANT_BYTES:  # long texts (statements): copied once, into one buffer
                return repeated_strings(values, counts.tolist())
            lengths = np.repeat(sizes, counts)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            if offsets[-1] > _INT32_MAX:
                raise OverflowError(f"{offsets[-1]} bytes in one string column exceed Arrow's 2 GiB")
            data = b"".join(e * int(c) for e, c in zip(encoded, counts, strict=True))
            validity = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
            return pa.Array.from_buffers(type_, len(lengths), [validity, pa.py_buffer(offsets.astype("<i4")),
                                                               pa.py_buffer(data)],
                                         null_count=0 if mask is None else int(mask.sum()))
        scale = 1_000_000 if name == "timestamp" else 1
        ints = np.fromiter((0 if v is None else v * scale for v in values), dtype=np.int64, count=len(values))
        return int_column(np.repeat(ints, counts), type_, mask)

    def _repeat_index(self, chunks: list[Chunk]) -> np.ndarray:
        """The chunk of each row (the per-chunk columns are built once per chunk and repeated by it)."""
        if self._repeat is None:
            self._repeat = np.repeat(np.arange(len(chunks), dtype=np.int32), self._counts)
        return self._repeat

    def _column(self, i: int, chunks: list[Chunk]) -> pa.Array:
        name, type_ = self.columns[i]
        counts, n = self._counts, self._rows
        one_per_chunk = n == len(chunks)
        if name == "file":
            return self._constant(i, self.path, n)
        if (chunks[0].per_row or any(c.per_row for c in chunks)) and (
                i == self.row_index_column or any(isinstance(c.values[i], np.ndarray) for c in chunks)):
            return self._per_row_column(i, chunks)
        if i == self.row_index_column:
            # first_row + position within the chunk, for every row
            if one_per_chunk:
                return pa.array(np.fromiter((c.first_row for c in chunks), np.int32, len(chunks)), pa.int32())
            starts = np.zeros(len(chunks), dtype=np.int64)
            np.cumsum(counts[:-1], out=starts[1:])
            firsts = np.fromiter((c.first_row for c in chunks), np.int64, len(chunks))
            repeat = self._repeat_index(chunks)
            return pa.array((np.arange(len(repeat), dtype=np.int64) - (starts - firsts)[repeat]).astype(np.int32),
                            pa.int32())
        if type_ is None:
            cells = [(c.n, c.encoded[i]) for c in chunks]
            if all(c is None for _n, c in cells):  # SQL NULL on every row (the before image of inserts)
                return self._constant(i, None, n)
            return join_cells(cells, self.json)
        # One value per chunk, repeated by index: a rows event's statement text (the query column) is encoded once,
        # not once per row.
        run_values = [c.values[i] for c in chunks]
        if not one_per_chunk:
            first = run_values[0]
            if all(v is first or v == first for v in run_values) and (first is None or type(first) in (str, int)):
                # one table, one op, no statement, one transaction: one value
                return self._constant(i, first, n)
            if len(chunks) <= _FEW_CHUNKS and all(v is None or type(v) in (str, int) for v in run_values):
                # a batch across a few transactions: each chunk's value, repeated (no per-row Python)
                return self._chunk_values(i, run_values, counts)
            if pa.types.is_string(type_):
                return repeated_strings(run_values, counts.tolist())
        if name == "timestamp":
            if not one_per_chunk and None not in run_values:
                micros = np.fromiter(run_values, dtype=np.int64, count=len(run_values)) * 1_000_000
                return int_column(micros[self._repeat_index(chunks)], type_)
            runs = pa.array([None if v is None else v * 1_000_000 for v in run_values], pa.int64()).cast(type_)
        else:
            runs = pa.array(run_values, type_)
        if one_per_chunk:
            return runs
        repeat = self._repeat_index(chunks)
        if runs.null_count == 0 and pa.types.is_integer(type_):
            return int_column(runs.to_numpy().astype(np.int64)[repeat], type_)
        return runs.take(repeat)


def int_column(values: np.ndarray, type_: pa.DataType, mask: np.ndarray | None = None) -> pa.Array:
    """An integer or timestamp column of ``type_`` from int64 ``values`` (``mask``: True where null), built from
    buffers: no copy for int64, and no pandas (``pa.array`` on a numpy array imports it on first use)."""
    n = len(values)
    if pa.types.is_int32(type_):
        data = values.astype("<i4")
    elif pa.types.is_int64(type_) or pa.types.is_timestamp(type_):
        data = np.ascontiguousarray(values, dtype="<i8")
    else:
        array = pa.array(values, pa.int64(), mask=mask)
        return array.cast(type_)
    validity = None
    nulls = 0
    if mask is not None:
        nulls = int(np.count_nonzero(mask))
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(data)], null_count=nulls)
