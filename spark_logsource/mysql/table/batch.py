"""The record batches of ``view=table``: its rows gathered column by column, then joined into Arrow arrays.

Rows arrive three ways (:mod:`.table.rows`): one at a time (the row-by-row path, which makes error rows), a rows
event's images as Python cells per column (the reference path), or a rows event's images as the kernel's column
parts (``KernelPiece``, :mod:`.table.kernel`). Each view column keeps its cells as a list of pieces in row order;
a column made only of kernel pieces (and of rows without the column) is joined buffer by buffer, with no Python
object per value; any other column is built by Arrow from the Python cells, kernel pieces included as arrays of
their own. The other columns (``op``, ``source``, the corrupt record) are kept as runs, one value per rows event,
and repeated in Arrow.

Columns: ``docs/formats/mysql-typed.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.arrow.columns import constant_column, string_column
from spark_logsource.mysql.read.batches import join_parts
from spark_logsource.mysql.table.kernel import KernelPiece, Side

if TYPE_CHECKING:
    from spark_logsource.mysql.table.rows import TableView

__all__ = ["SEQ_TYPE", "SOURCE_FIELDS", "Columns", "ImageColumns", "NotColumnWise", "image_columns", "typed_image"]

SOURCE_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("file", pa.string()), ("pos", pa.int64()), ("row_index", pa.int32()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("server_id", pa.int64()), ("gtid", pa.string()),
    ("xid", pa.int64()), ("database", pa.string()), ("table", pa.string()),
)
_SOURCE_TIMESTAMP = SOURCE_FIELDS[3][1]
#: One side's images of a rows event as Python cells: cells by view column name, and which rows have the image.
PythonImages = tuple[dict[str, list[Any]], list[bool]]
#: A column's cells in row order: Python cells, kernel cells, or a count of rows without the column (nulls).
_Piece = list[Any] | KernelPiece | int


def _list_tail(pieces: list[Any]) -> list[Any]:
    """The list at the end of ``pieces``, appended when the last piece is something else (a run, kernel cells)."""
    if pieces and type(pieces[-1]) is list:
        return pieces[-1]
    tail: list[Any] = []
    pieces.append(tail)
    return tail


class ImageColumns:
    """One image column (``before`` or ``after``) of the rows gathered so far, kept column by column: the pieces
    of each view column, and whether each row has the image at all (as pieces too: a run of rows that all have it
    or all lack it is one ``(count, flag)``, so a kernel run adds no Python object per row)."""

    __slots__ = ("pieces", "present")

    def __init__(self, names: Sequence[str]) -> None:
        self.pieces: dict[str, list[_Piece]] = {name: [] for name in names}
        self.present: list[tuple[int, bool] | list[bool]] = []

    def _tail(self, name: str) -> list[Any]:
        """The Python-cells piece at the end of the column (a new one if the last piece is not one)."""
        return _list_tail(self.pieces[name])

    def _present_tail(self) -> list[bool]:
        return _list_tail(self.present)

    def add_row(self, image: dict[str, Any] | None) -> None:
        """One row's image: cells by view column name (a column the row lacks is null), or None."""
        self._present_tail().append(image is not None)
        get = (image or {}).get
        for name in self.pieces:
            self._tail(name).append(get(name))

    def add_rows(self, n: int, images: PythonImages | None) -> None:
        """``n`` rows' images as Python cells column by column, and which rows have the image (None: none has)."""
        if images is None:
            self.present.append((n, False))
            columns: dict[str, list[Any]] = {}
        else:
            columns, present = images
            self._present_tail().extend(present)
        nulls = [None] * n
        for name in self.pieces:
            self._tail(name).extend(columns.get(name, nulls))

    def add_side(self, n: int, side: Side | None) -> None:
        """``n`` rows' images as the kernel gives them (None: no row has the image)."""
        self.present.append((n, side is not None))
        for name, pieces in self.pieces.items():
            piece = side.get(name) if side is not None else None
            if piece is None:
                pieces.append(n)
            elif type(piece) is list:
                self._tail(name).extend(piece)
            else:
                pieces.append(piece)

    def _absent(self) -> tuple[int, pa.Array | None]:
        """The row count, and the mask of rows without the image (None when every row has it)."""
        n = 0
        every = True
        for piece in self.present:
            if type(piece) is tuple:
                n += piece[0]
                every = every and (piece[1] or piece[0] == 0)
            else:
                n += len(piece)
                every = every and all(piece)
        if every:
            return n, None
        absent = np.concatenate([np.full(p[0], not p[1]) if type(p) is tuple
                                 else np.logical_not(np.array(p, dtype=bool)) for p in self.present])
        return n, pa.array(absent)

    def array(self, struct: pa.StructType) -> pa.Array:
        """The image column as a struct array of ``struct`` (the view's columns); null where a row has no image."""
        n, mask = self._absent()
        children = [_column(f.type, self.pieces[f.name], n) for f in struct]
        return pa.StructArray.from_arrays(children, fields=list(struct), mask=mask)


def _empty(t: pa.DataType, n: int) -> pa.Array | None:
    """``n`` valid empty values of ``t`` (zeros, empty strings), from buffers; None for a type not written here."""
    if pa.types.is_struct(t):
        children = [_empty(f.type, n) for f in t]
        if any(c is None for c in children):
            return None
        return pa.StructArray.from_arrays(children, fields=list(t))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(bytes(4 * (n + 1))), pa.py_buffer(b"")])
    if pa.types.is_boolean(t) or not (pa.types.is_primitive(t) or pa.types.is_decimal(t)):
        return None
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(bytes(t.bit_width // 8 * n))])


def _nulls(t: pa.DataType, n: int) -> pa.Array:
    """``n`` nulls of ``t`` as ``pa.array([None] * n, t)`` makes them, without a Python object per row: the
    children of a null struct hold empty values (what Spark's variant wants of its value and metadata)."""
    if pa.types.is_struct(t):
        children = _empty(t, n)
        if children is None:
            return pa.array([None] * n, t)
        return pa.StructArray.from_arrays(children.flatten(), fields=list(t), mask=pa.array(np.ones(n, dtype=bool)))
    return pa.nulls(n, t)


def _column(t: pa.DataType, pieces: list[_Piece], n: int) -> pa.Array:
    """One view column from its pieces (``n`` cells in all)."""
    kinds = {type(p) for p in pieces}
    if kinds <= {int}:  # no row has the column (an UPDATE's columns in an INSERT's before image, …)
        return _nulls(t, n)
    if tuple not in kinds:  # Python cells and rows without the column (a variant column is always this)
        cells: list[Any] = []
        for p in pieces:
            cells.extend([None] * p if isinstance(p, int) else p)
        return pa.array(cells, t)
    if list not in kinds:
        return _join_kernel(t, pieces, n)  # type: ignore[arg-type]
    arrays = [pa.array(p, t) if type(p) is list else pa.nulls(p, t) if type(p) is int
              else _join_kernel(t, [p], len(p[0])) for p in pieces]  # type: ignore[index, list-item]
    return pa.concat_arrays(arrays)


def _join_variable(t: pa.DataType, pieces: list[KernelPiece | int], n: int, validity: pa.Buffer | None, nulls: int,
                   data: int = 1) -> pa.Array:
    """The bytes ``p[data]`` with their int32 ends ``p[data + 1]`` of each kernel piece (nulls for a count) joined
    as one string / binary array of ``t``."""
    offsets, values = join_parts([(p, None, None) if isinstance(p, int) else (len(p[0]), p[data + 1], p[data])
                                  for p in pieces])
    return pa.Array.from_buffers(t, n, [validity, offsets, values], null_count=nulls)


def _join_kernel(t: pa.DataType, pieces: list[KernelPiece | int], n: int) -> pa.Array:
    """Kernel pieces (and counts of nulls) back to back as one Arrow array of ``t``, from their buffers."""
    valid = np.frombuffer(b"".join(bytes(p) if isinstance(p, int) else p[0] for p in pieces),
                          dtype=np.bool_)
    nulls = n - int(np.count_nonzero(valid))
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return _join_variable(t, pieces, n, validity, nulls)
    if pa.types.is_struct(t):  # a Variant (JSON parsed in C): values, then metadata; a null row has empty ones
        children = [_join_variable(f.type, pieces, n, None, 0, data) for f, data in zip(t, (1, 3), strict=True)]
        mask = pa.array(np.logical_not(valid)) if nulls else None
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    width = t.bit_width // 8
    data = b"".join(bytes(width * p) if isinstance(p, int) else p[1] for p in pieces)
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(data)], null_count=nulls)


SEQ_TYPE = pa.decimal128(38, 0)


def seq_column(file_number: int, pos: pa.Array, row_index: pa.Array) -> pa.Array:
    """``seq = file_number * 2**64 + pos * 2**32 + row_index`` of each row (null where ``pos`` or ``row_index`` is),
    built from buffers: a decimal128 is 16 bytes little-endian, the low word ``pos << 32 | row_index``, the high
    word the file number (``docs/formats/mysql-typed.md`` "Order column")."""
    n = len(pos)
    valid = np.logical_and(pos.is_valid().to_numpy(zero_copy_only=False),
                           row_index.is_valid().to_numpy(zero_copy_only=False))
    words = np.empty((n, 2), dtype=np.uint64)
    low = pos.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64) << np.uint64(32)
    words[:, 0] = low | row_index.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint32).astype(np.uint64)
    words[:, 1] = np.uint64(file_number)
    nulls = n - int(np.count_nonzero(valid))
    if nulls:
        words[~valid] = 0
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(SEQ_TYPE, n, [validity, pa.py_buffer(words.tobytes())], null_count=nulls)


class Columns:
    """Output rows gathered column by column, cut into record batches of the view's schema.

    Besides the image columns, a run per rows event (or per row of the row-by-row path): its row count, the row
    index of its first row (None: an error row without one), ``op``, the source struct's fields but ``file`` and
    ``row_index``, and the error text."""

    def __init__(self, view: TableView, path: str, seq_file: int) -> None:
        self.view = view
        self.path = path
        self.seq_file = seq_file
        self.corrupt = view.common.corrupt_column_or_none
        self.clear()

    def clear(self) -> None:
        names = [f.name for f in self.view.struct]
        self.images = {"before": ImageColumns(names), "after": ImageColumns(names)}
        self.runs: list[tuple[Any, ...]] = []
        self.n = 0
        self.bytes = 0

    def add(self, op: str | None, before: dict[str, Any] | None, after: dict[str, Any] | None,
            source: tuple[Any, ...], error: str | None, size: int = 0) -> None:
        """One row; ``source`` holds the source struct's fields in order (``file`` first, ignored)."""
        self.images["before"].add_row(before)
        self.images["after"].add_row(after)
        _file, pos, row_index, *rest = source
        self.runs.append((1, row_index, op, pos, *rest, error))
        self.n += 1
        self.bytes += size

    def add_event(self, op: str, n: int, before: PythonImages | None, after: PythonImages | None,
                  source: tuple[Any, ...], size: int) -> None:
        """The ``n`` rows of one rows event, their images as Python cells column by column; ``source`` as
        :meth:`add` takes it, with the row index left out (it is 0 .. n-1)."""
        self.images["before"].add_rows(n, before)
        self.images["after"].add_rows(n, after)
        self._event_rows(op, n, source, size)

    def add_kernel_event(self, op: str, n: int, before: Side | None, after: Side | None, source: tuple[Any, ...],
                         size: int) -> None:
        """As :meth:`add_event`, the images as the kernel gives them."""
        self.images["before"].add_side(n, before)
        self.images["after"].add_side(n, after)
        self._event_rows(op, n, source, size)

    def add_kernel_run(self, op: str, events: np.ndarray, before: Side | None, after: Side | None,
                       rest: tuple[Any, Any, Any, Any], size: int) -> None:
        """The rows of a run of rows events (:mod:`.encode.runs`), the images as the kernel gives them: ``events``
        holds pos, next pos, timestamp, server id and rows of each event; ``rest`` the gtid, xid, database and
        table they share."""
        n = int(events[:, 4].sum())
        self.images["before"].add_side(n, before)
        self.images["after"].add_side(n, after)
        gtid, xid, database, table = rest
        self.runs.extend((rows, 0, op, pos, timestamp, server_id, gtid, xid, database, table, None)
                         for pos, _next, timestamp, server_id, rows in events.tolist())
        self.n += n
        self.bytes += size

    def _event_rows(self, op: str, n: int, source: tuple[Any, ...], size: int) -> None:
        _file, pos, _row_index, *rest = source
        self.runs.append((n, 0, op, pos, *rest, None))
        self.n += n
        self.bytes += size

    def batch(self) -> pa.RecordBatch:
        n = self.n
        counts = np.fromiter((run[0] for run in self.runs), dtype=np.int64, count=len(self.runs))
        take = pa.array(np.repeat(np.arange(len(self.runs)), counts))
        columns = list(zip(*self.runs, strict=True))

        def repeated(values: tuple[Any, ...], t: pa.DataType) -> pa.Array:
            if values.count(values[0]) == len(values):  # one value in every run (a table's name, a server id)
                return constant_column(values[0], t, n)
            return pa.array(values, t).take(take)

        # row_index: each run counts from its first row's index (0 for a rows event); null for an error row
        within = pa.array((np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts))
                          .astype(np.int32))
        first_rows = columns[1]
        every_from_0 = first_rows.count(0) == len(first_rows)
        row_index = within if every_from_0 else pc.add(repeated(first_rows, pa.int32()), within)
        source_children = [string_column(self.path, n), repeated(columns[3], pa.int64()), row_index]
        for (_name, t), values in zip(SOURCE_FIELDS[3:], columns[4:-1], strict=True):
            if t == _SOURCE_TIMESTAMP:  # seconds → microseconds, in Arrow rather than per row
                source_children.append(pc.multiply(repeated(values, pa.int64()), 1_000_000).cast(t))
            else:
                source_children.append(repeated(values, t))
        arrays = [repeated(columns[2], pa.string()), self.images["before"].array(self.view.struct),
                  self.images["after"].array(self.view.struct),
                  pa.StructArray.from_arrays(source_children, fields=list(self.view.source_type)),
                  seq_column(self.seq_file, source_children[1], row_index)]
        if self.corrupt is not None:
            arrays.append(repeated(columns[-1], pa.string()))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.view.schema())
        self.clear()
        return batch


_VARIABLE = (str, bytes)


class NotColumnWise(Exception):
    """The images of a rows event cannot be converted column by column (the row-by-row path takes them)."""


def typed_image(image: dict[str, Any], cells: dict[str, tuple[str, Any]]) -> tuple[dict[str, Any], int]:
    """One decoded image as cells by union column name, and its string and binary bytes (ValueMismatch)."""
    out: dict[str, Any] = {}
    size = 0
    for key, value in image.items():
        name, convert = cells[key]
        if value is None:
            out[name] = None
        else:
            out[name] = convert(value)
            if type(value) in _VARIABLE:
                size += len(value)
    return out, size


def image_columns(images: list[dict[str, Any] | None],
                   cells: dict[str, tuple[str, Any]]) -> tuple[PythonImages | None, int]:
    """One side's images of a rows event as cells by union column name, with which rows have the image (None when
    none has), and their string and binary bytes. ValueMismatch as the converters raise it; NotColumnWise when the
    images do not share one key set (one event's images do: one plan decodes them all)."""
    first = next((image for image in images if image is not None), None)
    if first is None:
        return None, 0
    keys = first.keys()
    if any(image is not None and image.keys() != keys for image in images):
        raise NotColumnWise("the images of one rows event have different columns")
    present = [image is not None for image in images]
    rows: list[dict[str, Any]] = [image if image is not None else dict.fromkeys(first) for image in images]
    out: dict[str, list[Any]] = {}
    size = 0
    for key in first:
        name, convert = cells[key]
        raw = [image[key] for image in rows]
        out[name] = [None if v is None else convert(v) for v in raw]
        variable = [v for v in raw if type(v) in _VARIABLE]
        if variable:
            size += sum(map(len, variable))
    return (out, present), size
