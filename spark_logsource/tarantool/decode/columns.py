"""Rows of Tarantool block payloads → the Arrow columns of a batch: the boundary between decoding and batching.

A *column builder* holds the rows of the blocks read so far and hands them over a batch at a time::

    builder = column_builder("variant")
    builder.add_payload(payload, path, block_offset)  # the rows of one block (rows.py); on CorruptDataError none
    builder.add_corrupt(block_offset, message)        # one corrupt-record row: offset + message, the rest null
    builder.rows, builder.bytes                       # rows held, and their bytes counted by the batch byte cap
    builder.take(max_rows, max_bytes)                 # {column: pa.Array} of the next batch, removed from the builder

Two implementations give equal arrays for the same calls (``docs/ARCHITECTURE.md``, the twin rule):

- :class:`PyColumnBuilder`, the reference: :func:`rows.decode_payload_py` column lists, then ``pa.array`` per
  column when a batch is taken;
- :class:`KernelColumnBuilder`: the C kernel (``_kernel.ColumnBuilder``) decodes straight into Arrow buffers
  (validity bitmaps, offsets, data; Variant value/metadata pairs; JSON text) and a batch leaves it as a few bytes
  objects per column, wrapped here by :func:`spark_logsource.arrow.columns.array_from_parts`: no Python object per
  value.

:func:`column_builder` picks one through :func:`spark_logsource.native.load_kernel`.

Columns of :meth:`take`: ``offset`` (the block's file offset, int64), :data:`rows.SCALAR_COLUMNS` (types in
:data:`SCALAR_TYPES`), :data:`rows.VALUE_COLUMNS` (Variant struct, JSON string or msgpack binary, per
``tuple_format``) and ``corrupt`` (the message of a corrupt-record row, else null).  The next batch is the longest
prefix of the held rows within ``max_rows`` rows and ``max_bytes`` counted bytes, and at least one row: the rule of
:func:`spark_logsource.arrow.batching.cut_batches` applied row by row.  Counted bytes of a row: its value bytes (Variant
value and metadata, JSON text as UTF-8, msgpack bytes) plus its corrupt message as UTF-8.
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol

import pyarrow as pa

from spark_logsource.arrow.columns import array_from_parts, variant_array, variant_from_parts, variant_type
from spark_logsource.native import load_kernel
from spark_logsource.tarantool.decode.rows import (
    SCALAR_COLUMNS,
    TUPLE_FORMATS,
    VALUE_COLUMNS,
    decode_payload_py,
    output_keys,
)

__all__ = ["SCALAR_TYPES", "ColumnBuilder", "KernelColumnBuilder", "PyColumnBuilder", "column_builder",
           "value_type"]

SCALAR_TYPES: dict[str, pa.DataType] = {
    "lsn": pa.int64(),
    "replica_id": pa.int32(),
    "tsn": pa.int64(),
    "is_commit": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "type": pa.string(),
    "group_id": pa.int32(),
    "space_id": pa.int32(),
    "index_id": pa.int32(),
}


def value_type(tuple_format: str) -> pa.DataType:
    """The Arrow type of the ``key``, ``tuple``, ``ops`` and ``extra`` columns in ``tuple_format``."""
    if tuple_format == "variant":
        return variant_type()
    if tuple_format == "json":
        return pa.string()
    if tuple_format == "msgpack":
        return pa.binary()
    raise ValueError(f"tuple_format must be one of {TUPLE_FORMATS}, got {tuple_format!r}")


class ColumnBuilder(Protocol):
    """What the reader needs of a column builder (module docstring)."""

    @property
    def rows(self) -> int: ...

    @property
    def bytes(self) -> int: ...

    # builtins.bytes: in this class ``bytes`` is the property above
    def add_payload(self, payload: builtins.bytes, path: str, block_offset: int) -> int: ...

    def add_corrupt(self, block_offset: int, message: str) -> None: ...

    def take(self, max_rows: int, max_bytes: int) -> dict[str, pa.Array]: ...


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _cell_bytes(cell: Any) -> int:
    if not cell:
        return 0
    return _utf8_len(cell) if isinstance(cell, str) else len(cell)


def batch_rows(sizes: list[int], total: int, max_rows: int, max_bytes: int) -> int:
    """How many leading rows (of ``sizes`` bytes each, ``total`` in all) form the next batch (module docstring)."""
    if len(sizes) <= max_rows and total <= max_bytes:
        return len(sizes)
    n = taken = 0
    for size in sizes:
        if n and (n >= max_rows or taken + size > max_bytes):
            break
        taken += size
        n += 1
    return n


class PyColumnBuilder:
    """The reference column builder: :func:`rows.decode_payload_py` lists, made Arrow arrays by ``take``."""

    def __init__(self, tuple_format: str) -> None:
        self.tuple_format = tuple_format
        self._value_type = value_type(tuple_format)
        self._keys = output_keys(tuple_format)
        self._value_keys = tuple(k for k in self._keys if k not in SCALAR_COLUMNS)
        self._cols: dict[str, list[Any]] = {k: [] for k in ("offset", *self._keys, "corrupt")}
        self._sizes: list[int] = []
        self.bytes = 0

    @property
    def rows(self) -> int:
        return len(self._sizes)

    def add_payload(self, payload: bytes, path: str, block_offset: int) -> int:
        cols = decode_payload_py(payload, self.tuple_format, path, block_offset)
        n = len(cols["lsn"])
        for key, values in cols.items():
            self._cols[key].extend(values)
        self._cols["offset"].extend([block_offset] * n)
        self._cols["corrupt"].extend([None] * n)
        sizes = [0] * n
        for key in self._value_keys:
            for i, cell in enumerate(cols[key]):
                sizes[i] += _cell_bytes(cell)
        self._sizes.extend(sizes)
        self.bytes += sum(sizes)
        return n

    def add_corrupt(self, block_offset: int, message: str) -> None:
        for key, values in self._cols.items():
            values.append(b"" if key.endswith(".metadata") else None)
        self._cols["offset"][-1] = block_offset
        self._cols["corrupt"][-1] = message
        self._sizes.append(_utf8_len(message))
        self.bytes += self._sizes[-1]

    def take(self, max_rows: int, max_bytes: int) -> dict[str, pa.Array]:
        if max_rows < 1:
            raise ValueError("max_rows must be at least 1")
        n = batch_rows(self._sizes, self.bytes, max_rows, max_bytes)
        cols = {}
        for key, values in self._cols.items():
            cols[key] = values[:n]
            del values[:n]
        self.bytes -= sum(self._sizes[:n])
        del self._sizes[:n]
        out = {"offset": pa.array(cols["offset"], pa.int64())}
        out.update((name, pa.array(cols[name], SCALAR_TYPES[name])) for name in SCALAR_COLUMNS)
        for name in VALUE_COLUMNS:
            if self.tuple_format == "variant":
                out[name] = variant_array(cols[name + ".value"], cols[name + ".metadata"])
            else:
                out[name] = pa.array(cols[name], self._value_type)
        out["corrupt"] = pa.array(cols["corrupt"], pa.string())
        return out


_KERNEL_TYPES: dict[str, pa.DataType] = {"offset": pa.int64(), **SCALAR_TYPES, "corrupt": pa.string()}


class KernelColumnBuilder:
    """The C kernel's column builder, its batches wrapped as Arrow arrays (no Python object per value)."""

    def __init__(self, tuple_format: str, kernel: Any) -> None:
        self.tuple_format = tuple_format
        self._value_type = value_type(tuple_format)
        self._builder = kernel.ColumnBuilder(tuple_format)
        self._names: tuple[str, ...] = kernel.COLUMNS
        # the kernel's methods themselves: no Python frame per block
        self.add_payload = self._builder.add_payload
        self.add_corrupt = self._builder.add_corrupt

    @property
    def rows(self) -> int:
        rows: int = self._builder.rows
        return rows

    @property
    def bytes(self) -> int:
        held: int = self._builder.bytes
        return held

    def take(self, max_rows: int, max_bytes: int) -> dict[str, pa.Array]:
        # the buffers come from Arrow's memory pool, which reuses them batch after batch (fresh pages cost faults)
        n, parts = self._builder.take(max_rows, max_bytes, pa.allocate_buffer)
        columns = dict(zip(self._names, parts, strict=True))
        out = {name: array_from_parts(_KERNEL_TYPES[name], n, columns[name])
               for name in ("offset", *SCALAR_COLUMNS)}
        for name in VALUE_COLUMNS:
            if self.tuple_format == "variant":
                out[name] = variant_from_parts(n, columns[name], columns[name + ".metadata"])
            else:
                out[name] = array_from_parts(self._value_type, n, columns[name])
        out["corrupt"] = array_from_parts(pa.string(), n, columns["corrupt"])
        return out


def column_builder(tuple_format: str) -> ColumnBuilder:
    """The column builder in use: the C kernel's unless :mod:`spark_logsource.native` says otherwise."""
    kernel = load_kernel("spark_logsource.tarantool._kernel")
    if kernel is None:
        return PyColumnBuilder(tuple_format)
    return KernelColumnBuilder(tuple_format, kernel)
