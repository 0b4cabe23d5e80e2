"""Read one Tarantool xlog/snap/vylog/run/index file (or a byte range of it) as Arrow record batches.

Ties together :mod:`meta` (the text header), :mod:`blocks` (framing, checksums, zstd, resync) and :mod:`rows`
(the rows of one block).  Output schema: ``file, offset, file_type, lsn, replica_id, tsn,
is_commit, timestamp, type, group_id, space_id, index_id, key, tuple, ops, extra`` and, in PERMISSIVE mode,
the corrupt-record column.  Bad data follows ``options.common.mode``:

- FAILFAST: raise the :class:`~spark_logsource.errors.CorruptDataError` (path + byte offset of the bad block).
- PERMISSIVE: one row per bad region (``file``, ``offset``, ``file_type`` and the corrupt column set, the rest
  null), then reading resumes at the next sync point.
- DROPMALFORMED: log a warning naming path and offset, skip.

A file whose meta header cannot be read is one bad region at offset 0 (reported by the split starting at 0).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_logsource.arrow.batching import MAX_BATCH_BYTES
from spark_logsource.arrow.columns import string_column, variant_field
from spark_logsource.errors import CorruptDataError
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.framing import BadRange
from spark_logsource.io.window import source_size
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.decode.columns import SCALAR_TYPES, column_builder
from spark_logsource.tarantool.decode.rows import SCALAR_COLUMNS, TUPLE_FORMATS, VALUE_COLUMNS
from spark_logsource.tarantool.xlog.blocks import Block, BlockScanner
from spark_logsource.tarantool.xlog.meta import XlogMeta, read_meta

__all__ = ["XlogMeta", "XlogReadOptions", "iter_file_batches", "read_meta", "xlog_schema"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class XlogReadOptions:
    """Options of the Tarantool reader: ``tuple_format`` in variant/json/msgpack, plus the common ones."""

    tuple_format: str = "variant"
    common: CommonOptions = field(default_factory=CommonOptions)

    def __post_init__(self) -> None:
        if self.tuple_format not in TUPLE_FORMATS:
            raise ValueError(f"tuple_format must be one of {TUPLE_FORMATS}, got {self.tuple_format!r}")


def _value_field(name: str, tuple_format: str) -> pa.Field:
    if tuple_format == "variant":
        return variant_field(name)
    if tuple_format == "json":
        return pa.field(name, pa.string())
    return pa.field(name, pa.binary())


def xlog_schema(tuple_format: str, corrupt_column: str | None) -> pa.Schema:
    """The Arrow schema of every batch (all fields nullable); ``corrupt_column`` only in PERMISSIVE mode."""
    if tuple_format not in TUPLE_FORMATS:
        raise ValueError(f"tuple_format must be one of {TUPLE_FORMATS}, got {tuple_format!r}")
    fields = [pa.field("file", pa.string()), pa.field("offset", pa.int64()), pa.field("file_type", pa.string())]
    fields += [pa.field(name, SCALAR_TYPES[name]) for name in SCALAR_COLUMNS]
    fields += [_value_field(name, tuple_format) for name in VALUE_COLUMNS]
    if corrupt_column is not None:
        fields.append(pa.field(corrupt_column, pa.string()))
    return pa.schema(fields)


class _BatchBuilder:
    """Decoded blocks → record batches of the output schema, within the row and byte limits of
    :mod:`spark_logsource.arrow.batching`, with the predicates applied.

    The rows accumulate in a column builder (:mod:`spark_logsource.tarantool.decode.columns`: Arrow buffers written by
    the
    C kernel, or the reference's lists); a batch is taken whenever the rows or bytes held reach a limit, so all the
    work per row happens in the decoder and the work here is per block and per batch.
    """

    def __init__(self, path: str, file_type: str | None, options: XlogReadOptions, predicates: Sequence[Predicate],
                 max_batch_bytes: int | None = None):
        self.path = path
        self.file_type = file_type
        self.corrupt_column = options.common.corrupt_column_or_none
        self.schema = xlog_schema(options.tuple_format, self.corrupt_column)
        self.predicates = predicates
        self.columns = column_builder(options.tuple_format)
        self.batch_size = options.common.batch_size
        self.max_bytes = MAX_BATCH_BYTES if max_batch_bytes is None else max_batch_bytes
        self._constants: tuple[int, list[pa.Array]] = (-1, [])

    def add_payload(self, block: Block) -> None:
        """The rows of a good block; CorruptDataError (and nothing added) when they do not decode."""
        self.columns.add_payload(block.payload, self.path, block.offset)

    def add_corrupt(self, offset: int, message: str) -> None:
        self.columns.add_corrupt(offset, message)

    def full_batches(self) -> Iterator[pa.RecordBatch]:
        columns = self.columns
        while columns.rows >= self.batch_size or columns.bytes >= self.max_bytes:
            yield from self._take()

    def flush(self) -> Iterator[pa.RecordBatch]:
        while self.columns.rows:
            yield from self._take()

    def _constant_columns(self, n: int) -> list[pa.Array]:
        """``file`` and ``file_type`` of ``n`` rows (kept for the next batch of the same length)."""
        if self._constants[0] != n:
            file_type = string_column(self.file_type, n) if self.file_type is not None else pa.nulls(n, pa.string())
            self._constants = (n, [string_column(self.path, n), file_type])
        return self._constants[1]

    def _take(self) -> Iterator[pa.RecordBatch]:
        cols = self.columns.take(self.batch_size, self.max_bytes)
        file, file_type = self._constant_columns(len(cols["lsn"]))
        arrays = [file, cols["offset"], file_type]
        arrays += [cols[name] for name in SCALAR_COLUMNS]
        arrays += [cols[name] for name in VALUE_COLUMNS]
        if self.corrupt_column is not None:
            arrays.append(cols["corrupt"])
        batch = apply_predicates(pa.RecordBatch.from_arrays(arrays, schema=self.schema), self.predicates,
                                 corrupt_column=self.corrupt_column)
        if len(batch):
            yield batch


def _report(builder: _BatchBuilder, mode: ParseMode, offset: int, error: CorruptDataError) -> None:
    """Apply the parse mode to one bad region (a corrupt row at ``offset``, the region's first byte)."""
    mode.handle(error, lambda e: builder.add_corrupt(offset, str(e)))


def iter_file_batches(
    source: Any,
    path: str,
    *,
    start: int = 0,
    end: int | None = None,
    options: XlogReadOptions | None = None,
    predicates: Sequence[Predicate] = (),
    exact_start: bool = False,
    size: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches (≤ ``batch_size`` rows, schema :func:`xlog_schema`) of the blocks starting in ``[start, end)``.

    ``source`` is seekable (pyarrow NativeFile or Python binary file); ``path`` is written to the ``file``
    column and to error messages.  Only rows satisfying every predicate are returned.
    Streaming reads a range of a file that may still grow: ``exact_start`` says ``start`` is a block boundary
    (the chain starts there, so a bad region at ``start`` is reported rather than skipped by a resync) and
    ``size`` treats the file as ending there (bytes written after the range was planned are never looked at).
    """
    options = options if options is not None else XlogReadOptions()
    mode = options.common.mode
    size = source_size(source) if size is None else size
    if size == 0:
        log.info("%s: empty file (still being created?)", path)
        return
    try:
        meta = read_meta(source, path)
    except CorruptDataError as exc:
        if start > 0:
            return
        builder = _BatchBuilder(path, None, options, predicates)
        _report(builder, mode, exc.offset or 0, exc)
        yield from builder.flush()
        return
    builder = _BatchBuilder(path, meta.file_type, options, predicates)
    scanner = BlockScanner(
        source,
        path,
        data_offset=max(meta.data_offset, start) if exact_start else meta.data_offset,
        start=start,
        end=end,
        verify_checksums=options.common.verify_checksums,
        size=size,
    )
    for item in scanner:
        if isinstance(item, Block):
            try:
                builder.add_payload(item)
            except CorruptDataError as exc:
                scanner.mark_rows_bad()
                _report(builder, mode, item.offset, exc)
        elif isinstance(item, BadRange):
            _report(builder, mode, item.offset, item.error)
        yield from builder.full_batches()
    yield from builder.flush()
