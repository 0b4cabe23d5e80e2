"""Column builders that repeat values from buffers give exactly what a list-based build gives."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_logsource.arrowcols import repeated_strings


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=40)), st.integers(0, 9)), max_size=12))
def test_repeated_strings_equal_a_plain_build(runs) -> None:
    values = [v for v, _ in runs]
    counts = [c for _, c in runs]
    got = repeated_strings(values, counts)
    got.validate(full=True)
    want = pa.array([v for v, c in runs for _ in range(c)], pa.string())
    assert got.equals(want)
