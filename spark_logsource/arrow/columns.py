"""Arrow column builders shared by the decoders: variant columns, repeated constant columns, and the one way a
column a C kernel wrote into Arrow buffers becomes an array (:func:`array_from_parts`, :func:`variant_from_parts`).

A Spark ``variant`` column crosses the Arrow boundary as ``struct<value: binary NOT NULL, metadata: binary
NOT NULL>`` whose field carries the metadata ``{b"variant": b"true"}`` (Spark's ``ArrowUtils``; checked on
pyspark 4.3, see ``docs/formats/spark-datasource.md`` "Variant column shape").  A SQL NULL row is a null
struct slot; its children still hold a (empty) value so that they stay non-null, as their type demands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.arrow.variant import EMPTY_METADATA, encode_variant

__all__ = [
    "VARIANT_METADATA",
    "array_from_parts",
    "constant_column",
    "int64_column",
    "string_column",
    "variant_array",
    "variant_array_from_python",
    "variant_field",
    "variant_from_parts",
    "variant_type",
]

#: One column as a kernel hands it over (``_native/_arrow_out.h``: buffers from the caller's ``pa.allocate_buffer``):
#: (null count, validity bitmap or None, data, int32 offsets or None for a fixed-width type).
KernelParts = tuple[int, "pa.Buffer | None", "pa.Buffer", "pa.Buffer | None"]

VARIANT_METADATA = {b"variant": b"true"}

_VARIANT_CHILDREN = (
    pa.field("value", pa.binary(), nullable=False),
    pa.field("metadata", pa.binary(), nullable=False),
)
_VARIANT_TYPE = pa.struct(list(_VARIANT_CHILDREN))
_INT32_MAX = 2**31 - 1


def variant_type() -> pa.DataType:
    """``struct<value: binary NOT NULL, metadata: binary NOT NULL>``, the Arrow form of a Spark variant."""
    return _VARIANT_TYPE


def variant_field(name: str, nullable: bool = True) -> pa.Field:
    """A schema field for a variant column (the struct type plus the ``variant`` field metadata)."""
    return pa.field(name, _VARIANT_TYPE, nullable=nullable, metadata=VARIANT_METADATA)


def variant_array(values: Sequence[bytes | None], metadatas: Sequence[bytes | None]) -> pa.StructArray:
    """A variant column from encoded parts; a ``None`` value makes that row SQL NULL.

    ``values[i]`` and ``metadatas[i]`` are the two halves returned by
    :func:`spark_logsource.arrow.variant.encode_variant`.
    """
    if len(values) != len(metadatas):
        raise ValueError(f"{len(values)} values but {len(metadatas)} metadatas")
    value_array = pa.array(values, pa.binary())
    metadata_array = pa.array(metadatas, pa.binary())
    mask = None
    if value_array.null_count:
        mask = value_array.is_null()
        # the children of a null row hold empty bytes, so that they stay non-null as Spark's variant wants
        value_array = value_array.fill_null(b"")
        metadata_array = pc.if_else(mask, b"", metadata_array).fill_null(b"")
    elif metadata_array.null_count:
        raise ValueError("a non-null variant value has no metadata")
    return pa.StructArray.from_arrays([value_array, metadata_array], fields=list(_VARIANT_CHILDREN), mask=mask)


def variant_array_from_python(objs: Sequence[Any], present: Sequence[bool] | None = None) -> pa.StructArray:
    """Encode Python values into a variant column.

    ``None`` in ``objs`` is a variant null (JSON ``null``), unless ``present[i]`` is false: then row ``i`` is
    SQL NULL (the column is absent in that row).
    """
    if present is not None and len(present) != len(objs):
        raise ValueError(f"{len(objs)} values but {len(present)} presence flags")
    values: list[bytes | None] = []
    metadatas: list[bytes | None] = []
    for index, obj in enumerate(objs):
        if present is not None and not present[index]:
            values.append(None)
            metadatas.append(EMPTY_METADATA)
            continue
        value, metadata = encode_variant(obj)
        values.append(value)
        metadatas.append(metadata)
    return variant_array(values, metadatas)


def string_column(value: str, n: int) -> pa.Array:
    """``n`` copies of ``value`` as a ``pa.string()`` array, built from buffers (no per-row Python work)."""
    data = value.encode("utf-8")
    if n < 0:
        raise ValueError(f"negative length {n}")
    if len(data) * n > _INT32_MAX:
        raise ValueError(f"{n} copies of a {len(data)}-byte string exceed the 2 GiB of a pa.string() column")
    offsets = np.arange(0, len(data) * (n + 1), len(data), dtype=np.int32) if data else np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


_SMALL_RUN = 1 << 16  # bytes; smaller runs are built with bytes repetition (one extra copy, less overhead)


def repeated_strings(values: Sequence[str | None], counts: Sequence[int]) -> pa.Array:
    """``counts[i]`` copies of each ``values[i]`` (None = null) as one ``pa.string()`` array, from buffers.

    Each value is UTF-8 encoded once and copied at memcpy speed: the way to repeat a long text (a binlog
    statement) on every row it covers.
    """
    if len(values) != len(counts):
        raise ValueError(f"{len(values)} values but {len(counts)} counts")
    # merge runs of the same value (a statement covers several rows events in a row), then encode each once
    merged_values: list[str | None] = []
    merged_counts: list[int] = []
    for value, count in zip(values, counts, strict=True):
        if merged_values and (value is merged_values[-1] or value == merged_values[-1]):
            merged_counts[-1] += count
        else:
            merged_values.append(value)
            merged_counts.append(count)
    values, counts = merged_values, merged_counts
    encoded = [None if v is None else v.encode("utf-8") for v in values]
    reps = np.asarray(counts, dtype=np.int64)
    n = int(reps.sum())
    lengths = np.repeat(np.array([0 if e is None else len(e) for e in encoded], dtype=np.int64), reps)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _INT32_MAX:
        raise ValueError(f"{offsets[-1]} bytes of text exceed the 2 GiB of a pa.string() column")
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    at = 0
    for e, c in zip(encoded, counts, strict=True):
        if not e or not c:
            continue
        size = len(e) * int(c)
        if size <= _SMALL_RUN:
            data[at:at + size] = np.frombuffer(e * int(c), dtype=np.uint8)
        else:
            segment = data[at:at + size]
            segment[:len(e)] = np.frombuffer(e, dtype=np.uint8)
            filled = len(e)
            while filled < size:  # one memcpy per doubling: each byte is written once
                step = min(filled, size - filled)
                segment[filled:filled + step] = segment[:step]
                filled += step
        at += size
    validity = None
    if None in values:
        valid = np.repeat(np.array([e is not None for e in encoded]), reps)
        validity = pa.array(valid, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(data)])


def constant_column(value: Any, t: pa.DataType, n: int) -> pa.Array:
    """``n`` copies of ``value`` (None: nulls) as an array of ``t``, from one buffer for strings and integers
    (``pa.repeat`` goes value by value); other types through ``pa.repeat``."""
    if value is None:
        return pa.nulls(n, t)
    if t == pa.string():
        return string_column(value, n)
    if pa.types.is_integer(t):
        if n < 0:
            raise ValueError(f"negative length {n}")
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(np.full(n, value, dtype=t.to_pandas_dtype()))])
    return pa.repeat(pa.scalar(value, t), n)


def int64_column(value: int, n: int) -> pa.Array:
    """``n`` copies of the int64 ``value``, built from one numpy buffer."""
    if n < 0:
        raise ValueError(f"negative length {n}")
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.full(n, value, dtype=np.int64))])


def array_from_parts(type_: pa.DataType, n: int, part: KernelParts, with_validity: bool = True) -> pa.Array:
    """The ``n`` values of one kernel column as an array of ``type_`` over its buffers (no copy, no Python object per
    value); ``with_validity=False`` for a variant's value / metadata child, which stays non-null under a null row."""
    nulls, validity, data, offsets = part
    buffers = [validity if with_validity else None, *(() if offsets is None else (offsets,)), data]
    return pa.Array.from_buffers(type_, n, buffers, null_count=nulls if with_validity else 0)


def variant_from_parts(n: int, part: KernelParts, metadata: KernelParts) -> pa.Array:
    """A kernel's variant column: the values ``part`` (whose validity is the struct's) and their ``metadata``."""
    children = [array_from_parts(pa.binary(), n, part, with_validity=False),
                array_from_parts(pa.binary(), n, metadata, with_validity=False)]
    return pa.Array.from_buffers(_VARIANT_TYPE, n, [part[1]], null_count=part[0], children=children)
