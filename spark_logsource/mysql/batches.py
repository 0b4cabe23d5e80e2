"""Rows of a view, collected as chunks and cut into Arrow record batches within a row and a byte limit.

A :class:`Chunk` is a run of rows sharing every column but the per-row ones (one rows event's changes, or one
single row); :class:`BatchBuilder` turns chunks into RecordBatches of at most ``batchSize`` rows and at most
:data:`MAX_BATCH_BYTES` of string and binary data (a statement repeated on thousands of rows, large BLOBs), with
the pushed predicates applied exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..arrowcols import repeated_strings, string_column, variant_array
from ..filters import Predicate, apply_predicates
from ..jsontext import to_json
from ..variant import encode_variant
from .read_options import BinlogReadOptions
from .rows_encode import EncodedRows
from .schema import CHANGES_COLUMNS, EVENTS_COLUMNS, binlog_schema

__all__ = ["ABSENT", "AFTER", "BEFORE", "MAX_BATCH_BYTES", "XID", "BatchBuilder", "Chunk"]

#: String and binary bytes in one output batch at most (Arrow's string and binary columns hold < 2 GiB).
MAX_BATCH_BYTES = 256 << 20


class _Absent:
    """Marks a variant cell that is SQL NULL (not a variant null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
XID, BEFORE, AFTER = (next(i for i, (name, _t) in enumerate(CHANGES_COLUMNS) if name == n)
                         for n in ("xid", "before", "after"))


class Chunk:
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

    def rows(self, lo: int, hi: int, json: bool) -> Chunk:
        """The chunk of rows ``lo`` .. ``hi - 1``."""
        encoded = {i: (cells[lo:hi] if json else (cells[0][lo:hi], cells[1][lo:hi]))
                   for i, cells in self.encoded.items()}
        return Chunk(self.values, hi - lo, encoded, json, self.first_row + lo)


class BatchBuilder:
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
        self.chunks: list[Chunk] = []
        self.rows = 0
        self.bytes = 0

    def add(self, row: tuple) -> None:
        """One row given cell by cell; variant cells are Python values (or ``ABSENT`` for SQL NULL)."""
        values = list(row) + [None] * (len(self.columns) - len(row))
        encoded = {}
        for i in self.variant_columns:
            cell = values[i]
            if self.json:
                encoded[i] = [None if cell is ABSENT else to_json(cell)]
            elif cell is ABSENT:
                encoded[i] = ([None], [b""])
            else:
                value, metadata = encode_variant(cell)
                encoded[i] = ([value], [metadata])
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
        self._append(Chunk(list(values), rows.n, {before: rows.before, after: rows.after}, self.json))

    def _append(self, chunk: Chunk) -> None:
        if chunk.n:
            self.chunks.append(chunk)
            self.rows += chunk.n
            self.bytes += chunk.size

    def full(self) -> bool:
        return self.rows >= self.batch_size or self.bytes >= MAX_BATCH_BYTES

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Everything added so far, as batches within the row and byte limits, with the predicates applied."""
        chunks, self.chunks, self.rows, self.bytes = self.chunks, [], 0, 0
        group: list[Chunk] = []
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

    def emit(self) -> Iterator[pa.RecordBatch]:
        """Everything added so far, as non-empty batches (see :meth:`batches`)."""
        for batch in self.batches():
            if len(batch):
                yield batch

    def _build(self, chunks: list[Chunk]) -> Iterator[pa.RecordBatch]:
        arrays = [self._column(i, chunks) for i in range(len(self.columns))]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self.predicates:
            batch = apply_predicates(batch, self.predicates)
        if len(batch):
            yield batch

    def _column(self, i: int, chunks: list[Chunk]) -> pa.Array:
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

