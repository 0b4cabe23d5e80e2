"""Predicates applied to Arrow batches give exactly SQL's answer (checked against a row-by-row evaluation)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_logsource.filters import Predicate, allowed_values, apply_predicates, value_range

OPS = ["=", "<=>", "<", "<=", ">", ">=", "in", "is_null", "is_not_null"]
ints = st.one_of(st.none(), st.integers(-5, 5))


@st.composite
def predicates(draw):
    op = draw(st.sampled_from(OPS))
    if op == "in":
        return Predicate("x", op, tuple(draw(st.lists(ints, max_size=3))))
    if op in ("is_null", "is_not_null"):
        return Predicate("x", op)
    return Predicate("x", op, draw(ints))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ints, max_size=30), preds=st.lists(predicates(), max_size=3))
def test_arrow_evaluation_equals_row_by_row_sql(values, preds) -> None:
    batch = pa.RecordBatch.from_pydict({"x": pa.array(values, pa.int64()), "i": pa.array(range(len(values)))})
    got = apply_predicates(batch, preds).column("i").to_pylist()
    want = [i for i, v in enumerate(values) if all(p.matches(v) for p in preds)]
    assert got == want


def test_timestamps_compare_as_instants() -> None:
    ts = pa.array([0, 1_000_000, None], pa.timestamp("us", tz="UTC"))
    batch = pa.RecordBatch.from_pydict({"t": ts})
    cut = dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert len(apply_predicates(batch, [Predicate("t", ">=", cut)])) == 1
    plus_one = dt.timezone(dt.timedelta(hours=1))
    at_0001_utc = dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=plus_one)
    assert apply_predicates(batch, [Predicate("t", "<", at_0001_utc)]).column("t").to_pylist() == [
        dt.datetime(1970, 1, 1, tzinfo=dt.UTC)]


def test_ranges_and_sets_for_pruning() -> None:
    preds = [Predicate("lsn", ">=", 10), Predicate("lsn", "<", 20), Predicate("lsn", ">", 12),
             Predicate("r", "in", (1, 2, None)), Predicate("r", "=", 2)]
    assert value_range(preds, "lsn") == (12, False, 20, False)
    assert allowed_values(preds, "r") == {2}
    assert allowed_values(preds, "lsn") is None
