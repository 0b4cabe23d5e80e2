"""Column builders that repeat values from buffers give exactly what a list-based build gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_logsource.arrow.columns import array_from_parts, repeated_strings, variant_from_parts, variant_type


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=40)), st.integers(0, 9)), max_size=12))
def test_repeated_strings_equal_a_plain_build(runs) -> None:
    values = [v for v, _ in runs]
    counts = [c for _, c in runs]
    got = repeated_strings(values, counts)
    got.validate(full=True)
    want = pa.array([v for v, c in runs for _ in range(c)], pa.string())
    assert got.equals(want)


def _offsets(*ends: int) -> pa.Buffer:
    return pa.py_buffer(np.array([0, *ends], "<i4").tobytes())


def test_a_kernel_column_is_one_array_over_its_buffers() -> None:
    """The one hand-over of the kernels writing Arrow buffers: (null count, validity bitmap, data, offsets)."""
    validity = pa.py_buffer(bytes([0b101]))
    text = array_from_parts(pa.string(), 3, (1, validity, pa.py_buffer(b"abcde"), _offsets(2, 2, 5)))
    text.validate(full=True)
    assert text.equals(pa.array(["ab", None, "cde"], pa.string()))
    ints = array_from_parts(pa.int64(), 2, (0, None, pa.py_buffer(np.array([7, -1], "<i8").tobytes()), None))
    assert ints.equals(pa.array([7, -1], pa.int64()))
    child = array_from_parts(pa.binary(), 3, (1, validity, pa.py_buffer(b"abcde"), _offsets(2, 2, 5)),
                             with_validity=False)
    assert child.null_count == 0 and child.to_pylist() == [b"ab", b"", b"cde"]


def test_a_kernel_variant_column_keeps_its_children_non_null() -> None:
    validity = pa.py_buffer(bytes([0b110]))
    meta = b"\x01\x00\x00"
    got = variant_from_parts(3, (1, validity, pa.py_buffer(b"\x0c\x01\x0c\x02"), _offsets(0, 2, 4)),
                             (0, None, pa.py_buffer(meta * 3), _offsets(3, 6, 9)))
    got.validate(full=True)
    assert got.type == variant_type()
    assert got.to_pylist() == [None, {"value": b"\x0c\x01", "metadata": meta}, {"value": b"\x0c\x02", "metadata": meta}]
    assert got.field("value").null_count == 0 and got.field("metadata").null_count == 0
