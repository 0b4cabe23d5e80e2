"""The Tarantool column builders (``spark_logsource.tarantool.decode.columns``) seen through the reference's list
contract.

Tests written against ``decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list]`` run
unchanged over the Arrow boundary: a payload goes into a builder, its batch comes out as Arrow arrays, and
:func:`arrays_to_lists` turns those back into the reference's lists (timestamps as int microseconds, an absent
Variant as value None with metadata ``b""``). The arrays are validated in full on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pyarrow as pa

from spark_logsource.tarantool.decode import columns, rows
from spark_logsource.tarantool.decode.rows import SCALAR_COLUMNS, VALUE_COLUMNS
from tests.support.twins import compiled

Decoder = Callable[[bytes, str, str, int], dict[str, list]]
BIG = 1 << 62


def kernel_module() -> ModuleType:
    """The compiled kernel (the test is skipped where it is not built: ``tests/kernels`` fails then)."""
    return compiled("spark_logsource.tarantool._kernel")


def new_builder(kind: str, tuple_format: str) -> columns.ColumnBuilder:
    """A column builder of the implementation ``kind`` ("python" or "c")."""
    if kind == "python":
        return columns.PyColumnBuilder(tuple_format)
    return columns.KernelColumnBuilder(tuple_format, kernel_module())


def arrays_to_lists(arrays: dict[str, pa.Array], tuple_format: str) -> dict[str, list]:
    """A batch of a column builder as the reference's column lists (keys: ``rows.output_keys``)."""
    for array in arrays.values():
        array.validate(full=True)
    out: dict[str, list] = {}
    for name in SCALAR_COLUMNS:
        array = arrays[name]
        out[name] = (array.cast(pa.int64()) if name == "timestamp" else array).to_pylist()
    for name in VALUE_COLUMNS:
        array = arrays[name]
        if tuple_format == "variant":
            valid = array.is_valid().to_pylist()
            values = array.field("value").to_pylist()
            out[name + ".value"] = [v if ok else None for v, ok in zip(values, valid, strict=True)]
            out[name + ".metadata"] = array.field("metadata").to_pylist()
        else:
            out[name] = array.to_pylist()
    assert list(out) == list(rows.output_keys(tuple_format))
    return out


def builder_decoder(kind: str) -> Decoder:
    """``decode_payload`` through a fresh column builder of ``kind``: one payload in, its one batch out."""

    def decode(payload: bytes, tuple_format: str, path: str, block_offset: int) -> dict[str, list]:
        builder = new_builder(kind, tuple_format)
        n = builder.add_payload(payload, path, block_offset)
        assert builder.rows == n
        arrays = builder.take(BIG, BIG)
        assert builder.rows == 0 and builder.bytes == 0
        assert arrays["offset"].to_pylist() == [block_offset] * n
        assert arrays["corrupt"].null_count == n
        return arrays_to_lists(arrays, tuple_format)

    return decode
