"""``view=table``'s typed columns from the compiled kernel: the C twin of the conversion in :mod:`.table.rows`.

The reference path decodes a rows event into one dict per image (:func:`.rows.parse_rows_event`) and converts
each value with :func:`.table.layout.cell_converter`. Here the kernel (``_kernel_typed.c`` ``typed_rows``, conversions
in ``_typed.h``) decodes the images with the same value decoders as the changes view and writes each value straight
into its column's Arrow buffers — validity, little-endian data, or offsets and bytes — so a rows event leaves C as
a few bytes objects per column (:class:`KernelPiece`), without a Python object per value.

Each column's conversion (:func:`conversion`) repeats ``cell_converter``'s checks on the decoded value's Variant
type (``_typed.h`` says how the two correspond). A value the kernel cannot convert exactly — a zero date, a number
out of the declared range, text that is not in its character set, an ENUM number without a name — makes the kernel
decline the whole event, and :mod:`.table.rows` takes its Python path, which gives the error row or the reference
value. So do malformed events (the Python decoder then raises its own error), PARTIAL_UPDATE_ROWS and images with
a MySQL JSON column (as in :mod:`.encode.images`). A JSON column whose values arrive as text (MariaDB's JSON is a
LONGTEXT) is parsed in C into each value's Variant and metadata (``_native/_json_variant.h``); a text the parser
leaves to Python (not JSON, NaN, more than 38 digits, a duplicate key, ...) declines the event. Other columns the
view types as variant (a column whose type changed too much) leave the kernel as each value's Variant primitive;
they are turned back into the decoded Python value here and converted by ``cell_converter``, one call per value,
as the reference does.

The byte count a kernel event adds to the batch's byte cap (``MAX_BATCH_BYTES``) is the bytes of its text, binary
and variant cells (UTF-8 for text, and the JSON text of a JSON value); the reference counts characters of text. The
two differ only in where a batch of non-ASCII text above 256 MiB is cut. Fixed-width data and offsets are written
in the machine's byte order, which Arrow reads as little-endian: like the other kernels, this one assumes a
little-endian machine (x86-64, AArch64).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from spark_logsource.arrow.variant import EMPTY_METADATA, decode_variant
from spark_logsource.errors import CorruptDataError
from spark_logsource.mysql.binlog.events import BinlogEvent
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.tablemap import TableMap
from spark_logsource.mysql.encode.images import OP_CODES, PARTIAL_UPDATE_ROWS, kernel_event, kernel_plans
from spark_logsource.mysql.encode.runs import RUN_MAX_BYTES, RUN_MAX_ROWS, RowsRun, event_bytes, run_events, run_head
from spark_logsource.mysql.table.layout import MAX_DECIMAL_DIGITS, ColumnSpec, ValueMismatch, cell_converter
from spark_logsource.native import import_kernel, load_kernel

__all__ = ["KernelPiece", "TypedRows", "TypedShape", "conversion", "kernel_available", "typed_rows_event", "typed_run"]

_kernel = import_kernel("spark_logsource.mysql._kernel")

# enum tk_source / tk_target of _typed.h (the kernel exports them; a test compares)
S_NONE, S_INT, S_YEAR, S_FLOAT, S_DECIMAL, S_DATE, S_DATETIME, S_TIMESTAMP, S_TEXT, S_BIT, S_BYTES, S_RAW = range(12)
S_JSON = 12
T_INT8, T_INT16, T_INT32, T_INT64, T_FLOAT32, T_FLOAT64, T_DECIMAL, T_DATE32, T_TIMESTAMP = range(9)
T_STRING, T_BINARY, T_RAW, T_VARIANT = 9, 10, 11, 12

_INT_TARGETS = {pa.int8(): T_INT8, pa.int16(): T_INT16, pa.int32(): T_INT32, pa.int64(): T_INT64}
_TEXT_KINDS = frozenset({"time", "enum", "set"})
#: Declared kinds whose decoded values are Python ints (the Variant holds those above int64 as decimal16, scale 0).
_INTEGRAL_KINDS = frozenset({"int", "year", "bit"})
_BYTES_KINDS = frozenset({"geometry", "vector"})


def kernel_available() -> bool:
    """Whether events go to the kernel (built, and ``SPARK_LOGSOURCE_PURE_PYTHON`` not set); asked once per split."""
    return load_kernel("spark_logsource.mysql._kernel") is not None


def _conv(source: int, target: int, *, unsigned: bool = False, bits: int = 0, precision: int = 0, scale: int = 0,
          width: int = 0, src_precision: int = 0, src_scale: int = 0) -> tuple[int, ...]:
    """One conversion as the kernel takes it (``tk_conv`` of ``_typed.h``)."""
    return (source, target, int(unsigned), bits, precision, scale, width, src_precision, src_scale)


_FLOAT_TARGETS = {pa.float32(): T_FLOAT32, pa.float64(): T_FLOAT64}


def conversion(spec: ColumnSpec, column_type: pa.DataType | str) -> tuple[int, ...] | None:
    """The kernel's conversion of a column declared ``spec`` into a view column of ``column_type``; None when no
    value of it could convert (the events take the Python path)."""
    if isinstance(column_type, str):  # a variant column
        # JSON given as text (MariaDB) is parsed in C; anything else leaves C as its Variant primitive
        return _conv(S_JSON, T_VARIANT) if spec.kind == "json" else _conv(S_RAW, T_RAW)
    k = spec.kind
    t = column_type
    if k in ("int", "year"):
        if t in _INT_TARGETS:
            target, precision, scale = _INT_TARGETS[t], 0, 0
        elif pa.types.is_decimal128(t):
            target, precision, scale = T_DECIMAL, t.precision, t.scale
        else:
            return None
        if k == "year":
            return _conv(S_YEAR, target, precision=precision, scale=scale)
        return _conv(S_INT, target, unsigned=spec.unsigned, bits=8 * spec.size, precision=precision, scale=scale)
    if k in ("float", "double"):
        return _conv(S_FLOAT, _FLOAT_TARGETS[t]) if t in _FLOAT_TARGETS else None
    if k == "decimal":
        if spec.precision > MAX_DECIMAL_DIGITS or not pa.types.is_decimal128(t):
            return None
        return _conv(S_DECIMAL, T_DECIMAL, precision=t.precision, scale=t.scale, src_precision=spec.precision,
                     src_scale=spec.scale)
    if k == "date":
        return _conv(S_DATE, T_DATE32) if pa.types.is_date32(t) else None
    if k in ("datetime", "timestamp"):  # naive DATETIME, UTC TIMESTAMP
        tz = None if k == "datetime" else "UTC"
        fits = pa.types.is_timestamp(t) and t.unit == "us" and t.tz == tz
        return _conv(S_DATETIME if k == "datetime" else S_TIMESTAMP, T_TIMESTAMP) if fits else None
    if k in _TEXT_KINDS or (k in ("char", "blob") and not spec.binary):
        return _conv(S_TEXT, T_STRING) if t == pa.string() else None
    if k == "bit":
        width = (spec.size + 7) // 8
        return _conv(S_BIT, T_BINARY, width=width) if t == pa.binary() and 1 <= width <= 16 else None
    if k in _BYTES_KINDS or k in ("char", "blob"):
        return _conv(S_BYTES, T_BINARY) if t == pa.binary() else None
    return None  # json typed other than variant cannot happen; anything new takes the Python path


#: ``len(valid)`` cells of one column as the kernel gives them: ``(valid, data, ends)``, a validity byte per row
#: (1 = value), and the little-endian data of a fixed-width type, or the bytes back to back with each cell's int32
#: end offset (``ends``; None for a fixed-width type). A JSON column parsed in C (``S_JSON``) adds its Variants'
#: metadata the same way, and the byte count of the JSON texts: ``(valid, values, ends, metadata, metadata_ends,
#: text_bytes)``.
KernelPiece = tuple[Any, ...]
#: One side of a rows event by view column name: kernel cells, or Python cells (variant columns).
Side = dict[str, "KernelPiece | list[Any]"]


@dataclass(slots=True)
class TypedRows:
    """A rows event of the table as typed columns (what the transaction machine buffers; it reads ``n``)."""

    n: int
    before: Side | None
    after: Side | None
    size: int
    #: for a run of rows events: pos, next pos, timestamp, server id and rows of each event (:mod:`.encode.runs`)
    events: np.ndarray | None = None


@dataclass(slots=True)
class TypedShape:
    """The kernel's view of one image shape: the compiled conversions; per present column its view column name;
    the present columns of variant type, with the converter of their decoded values and whether they are declared
    integers (whose values above int64 come back as decimals); those of variable width (text, binary, variant)."""

    typed: Any
    names: tuple[str, ...]
    raw: tuple[tuple[int, Callable[[Any], Any], bool], ...]
    variable: tuple[int, ...]


def compile_shape(columns: tuple[tuple[str, ColumnSpec, pa.DataType | str], ...], table_map: TableMap,
                  present: int) -> TypedShape | None:
    """The :class:`TypedShape` of the present columns of ``table_map`` (``columns``: the view column name, declared
    spec and view column type of each TABLE_MAP column), or None when a column has no conversion."""
    indexes = [i for i in range(len(table_map.columns)) if present >> i & 1]
    convs = []
    for i in indexes:
        conv = conversion(columns[i][1], columns[i][2])
        if conv is None:
            return None
        convs.append(conv)
    raw = tuple((j, cell_converter(columns[i][1], columns[i][2]), columns[i][1].kind in _INTEGRAL_KINDS)
                for j, (i, c) in enumerate(zip(indexes, convs, strict=True)) if c[0] == S_RAW)
    variable = tuple(j for j, c in enumerate(convs) if c[1] in (T_STRING, T_BINARY, T_RAW, T_VARIANT))
    assert _kernel is not None  # shapes are asked for on the kernel path only (TableView.use_kernel)
    return TypedShape(_kernel.compile_typed(convs), tuple(columns[i][0] for i in indexes), raw, variable)


class RowMismatch(ValueMismatch):
    """A value of a variant column its converter refuses, in row ``row`` of the kernel's output."""

    def __init__(self, row: int, error: ValueMismatch) -> None:
        super().__init__(str(error))
        self.row = row


def _raw_cells(piece: KernelPiece, n: int, convert: Callable[[Any], Any], integral: bool) -> list[Any]:
    """The cells of a variant column: each value's Variant primitive decoded back, then converted (RowMismatch)."""
    valid, data, ends = piece
    assert ends is not None
    bounds = [0, *np.frombuffer(ends, dtype="<i4", count=n).tolist()]
    cells: list[Any] = []
    for i in range(n):
        value = decode_variant(data[bounds[i]:bounds[i + 1]], EMPTY_METADATA) if valid[i] else None
        if integral and type(value) is Decimal:  # an integer above int64 (decimal16, scale 0): the decoder's int
            value = int(value)
        try:
            cells.append(None if value is None else convert(value))
        except ValueMismatch as exc:
            raise RowMismatch(i, exc) from None
    return cells


def _side(n: int, parts: tuple[KernelPiece, ...], shape: TypedShape) -> tuple[Side, int]:
    side: Side = dict(zip(shape.names, parts, strict=True))
    for j, convert, integral in shape.raw:
        side[shape.names[j]] = _raw_cells(parts[j], n, convert, integral)
    # the byte cap counts a JSON value as its text (as the reference does), any other cell as its bytes
    return side, sum(parts[j][5] if len(parts[j]) == 6 else len(parts[j][1]) for j in shape.variable)


def _typed_rows(op: str, n: int, first: tuple[KernelPiece, ...], second: tuple[KernelPiece, ...] | None,
                shape: TypedShape, shape_after: TypedShape) -> TypedRows:
    """The kernel's two sides (in event order: update before, after; insert after; delete before) as TypedRows
    (ValueMismatch from a variant column's converter)."""
    first_side, size = _side(n, first, shape)
    if op == "insert":
        return TypedRows(n, None, first_side, size)
    if op == "delete":
        return TypedRows(n, first_side, None, size)
    assert second is not None
    second_side, second_size = _side(n, second, shape_after)
    return TypedRows(n, first_side, second_side, size + second_size)


def _shapes(op: str, present: int, present_after: int,
            shape_of: Callable[[int], TypedShape | None]) -> tuple[TypedShape, TypedShape] | None:
    shape = shape_of(present)
    shape_after = shape_of(present_after) if op == "update" else shape
    return None if shape is None or shape_after is None else (shape, shape_after)


def typed_rows_event(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                     table_map: TableMap, shape_of: Callable[[int], TypedShape | None], path: str, offset: int,
                     max_uncompressed: int) -> TypedRows | None:
    """The rows of one rows event of ``table_map`` as typed columns, or None: the event takes the Python path
    (see the module docstring). ``shape_of(present)`` gives the :class:`TypedShape` of an image shape."""
    if event_type == PARTIAL_UPDATE_ROWS:
        return None
    try:
        ev = kernel_event(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                          table_maps={table_map.table_id: table_map}, path=path, offset=offset,
                          max_uncompressed=max_uncompressed)
        plan, plan_after, label = kernel_plans(ev.table_map, ev.op, ev.present, ev.present_after, path, offset)
        shapes = _shapes(ev.op, ev.present, ev.present_after, shape_of)
        if plan is None or plan_after is None or shapes is None:
            return None
        assert _kernel is not None  # called on the kernel path only (TableView.use_kernel)
        result = _kernel.typed_rows(ev.data, ev.pos, plan, plan_after, shapes[0].typed, shapes[1].typed,
                                    OP_CODES[ev.op], ev.data_base, ev.in_block, label)
        if result is None:
            return None
        n, first, second = result
        return _typed_rows(ev.op, n, first, second, *shapes)
    except (CorruptDataError, BinlogDecodeError, ValueMismatch):
        return None  # the Python path raises the reference error, or makes the error rows


def typed_run(ev: BinlogEvent, buf: bytes, buf_start: int, stop: int, *, crc_len: int, verify: bool,
              table_id_size: int, post_header_len: int, table_map: TableMap,
              shape_of: Callable[[int], TypedShape | None], path: str, max_rows: int = RUN_MAX_ROWS,
              max_bytes: int = RUN_MAX_BYTES, map_body: bytes | None = None) -> RowsRun | None:
    """As :func:`.encode.runs.encode_run` (the run of rows events of ``table_map`` that begins with ``ev``, framed,
    checked and decoded by one kernel call), the rows as typed columns; None when ``ev`` is not for the kernel
    (the caller takes the per-event path). With ``map_body`` (the body of the TABLE_MAP in force) the run goes on
    past that TABLE_MAP logged again and past the statements' annotations: no row of this view carries them."""
    head = run_head(ev, buf, buf_start, table_id_size=table_id_size, post_header_len=post_header_len,
                    table_maps={table_map.table_id: table_map}, path=path)
    shapes = None if head is None else _shapes(head.op, head.present, head.present_after, shape_of)
    if head is None or shapes is None:
        return None
    assert _kernel is not None  # run_head gives None when the kernel is not built
    while True:
        packed, n, first, second = _kernel.encode_rows_run(
            *head.args(ev, buf, buf_start, stop, crc_len, verify, table_id_size, post_header_len), head.plan,
            head.plan_after, shapes[0].typed, shapes[1].typed, OP_CODES[head.op], False, head.label, max_rows,
            max_bytes, map_body, map_body is not None)
        if not packed:
            return None
        events = run_events(packed)
        try:
            rows = _typed_rows(head.op, n, first, second, *shapes)
            rows.events = events
        except RowMismatch as exc:
            # the run up to the event of that row, read again (the per-event path makes the error rows)
            bad = int(np.searchsorted(np.cumsum(events[:, 4]), exc.row, side="right"))
            if bad == 0:
                return None
            stop = int(events[bad, 0])
            continue
        return RowsRun(head.table_map, head.op, events, rows, event_bytes(events))
