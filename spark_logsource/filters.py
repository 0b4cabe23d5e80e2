"""Row predicates without Spark: what the Spark layer pushes down and what option filters become.

A :class:`Predicate` is one column-versus-literal test. A reader receives a list of them, AND-ed. Decoders may use
them to skip work (a file whose LSN range cannot match, a rows event of an unwanted table), but exactness comes from
:func:`apply_predicates`, which evaluates them on every output batch with pyarrow.compute with SQL semantics
(a comparison with NULL is not true, so such rows are dropped; ``<=>`` and IS NULL see NULLs).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

#: Supported operators. "in" takes a tuple of values; "is_null"/"is_not_null" take no value.
OPERATORS = frozenset({"=", "<=>", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with"})


@dataclass(frozen=True, slots=True)
class Predicate:
    """``column op value``, e.g. ``Predicate("lsn", ">=", 1000)``."""

    column: str
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"unsupported operator {self.op!r}")

    def matches(self, value: Any) -> bool:
        """Evaluate on one Python value with SQL semantics (NULL compares as not true)."""
        if self.op == "is_null":
            return value is None
        if self.op == "is_not_null":
            return value is not None
        if self.op == "<=>":
            return value == self.value
        if value is None or (self.value is None and self.op != "in"):
            return False
        if self.op == "=":
            return value == self.value
        if self.op == "in":
            return value in self.value
        if self.op == "<":
            return value < self.value
        if self.op == "<=":
            return value <= self.value
        if self.op == ">":
            return value > self.value
        if self.op == ">=":
            return value >= self.value
        if self.op == "starts_with":
            return isinstance(value, str) and value.startswith(self.value)
        raise AssertionError(self.op)


def _scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(type_) and isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return pa.scalar(value, type=type_)


def predicate_mask(batch: pa.RecordBatch, predicate: Predicate) -> pa.Array:
    """A boolean mask (no nulls) of the rows of ``batch`` for which ``predicate`` is true."""
    column = batch.column(predicate.column)
    op = predicate.op
    if op == "is_null":
        return pc.is_null(column)
    if op == "is_not_null":
        return pc.is_valid(column)
    if op == "in":
        values = [v for v in predicate.value if v is not None]
        if not values:
            return pa.array([False] * len(batch), pa.bool_())
        value_set = pa.array([_scalar(v, column.type).as_py() for v in values], type=column.type)
        mask = pc.is_in(column, value_set=value_set, skip_nulls=True)
    elif op == "<=>":
        if predicate.value is None:
            return pc.is_null(column)
        mask = pc.equal(column, _scalar(predicate.value, column.type))
    elif predicate.value is None:
        return pa.array([False] * len(batch), pa.bool_())
    elif op == "starts_with":
        mask = pc.starts_with(column, pattern=predicate.value)
    else:
        func = {"=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op]
        mask = func(column, _scalar(predicate.value, column.type))
    return pc.fill_null(mask, False)


def apply_predicates(batch: pa.RecordBatch, predicates: Sequence[Predicate],
                     keep_rows_with: str | None = None) -> pa.RecordBatch:
    """Rows of ``batch`` for which every predicate is true (all of them, exactly).

    ``keep_rows_with``: a column whose non-null rows are kept whatever the predicates say (the corrupt-record
    column, for filters given as reader options).
    """
    if not predicates or len(batch) == 0:
        return batch
    mask = None
    for predicate in predicates:
        m = predicate_mask(batch, predicate)
        mask = m if mask is None else pc.and_(mask, m)
    if keep_rows_with is not None and mask is not None:
        mask = pc.or_(mask, pc.is_valid(batch.column(keep_rows_with)))
    if mask is None or pc.all(mask).as_py():
        return batch
    return batch.filter(mask)


def in_filter(column: str, values: Iterable[Any] | None) -> list[Predicate]:
    """An option listing the values ``column`` may take, as predicates: none when the option was not given."""
    return [Predicate(column, "in", tuple(values))] if values else []


def range_filter(column: str, low: Any = None, high: Any = None) -> list[Predicate]:
    """``low <= column < high`` (the ``from*`` / ``to*`` options), each bound only when given."""
    return ([] if low is None else [Predicate(column, ">=", low)]) + \
        ([] if high is None else [Predicate(column, "<", high)])


def filter_batches(batches: Iterable[pa.RecordBatch], predicates: Sequence[Predicate],
                   keep_rows_with: str | None = None) -> Iterator[pa.RecordBatch]:
    """:func:`apply_predicates` on each of ``batches``, the batches left empty dropped."""
    for batch in batches:
        batch = apply_predicates(batch, predicates, keep_rows_with)
        if len(batch):
            yield batch


def allowed_values(predicates: Iterable[Predicate], column: str) -> set[Any] | None:
    """The finite set of values ``column`` may take under ``predicates`` (from ``=`` and ``in``), or None."""
    allowed: set[Any] | None = None
    for p in predicates:
        if p.column != column:
            continue
        if p.op in ("=", "<=>") and p.value is not None:
            values = {p.value}
        elif p.op == "in":
            values = {v for v in p.value if v is not None}
        else:
            continue
        allowed = values if allowed is None else allowed & values
    return allowed


def value_range(predicates: Iterable[Predicate], column: str) -> tuple[Any, bool, Any, bool]:
    """``(low, low_inclusive, high, high_inclusive)`` bounds implied for ``column``; None where unbounded."""
    low, low_inc, high, high_inc = None, True, None, True
    for p in predicates:
        if p.column != column or p.value is None:
            continue
        values: list[tuple[str, Any]] = []
        if p.op in ("=", "<=>"):
            values = [(">=", p.value), ("<=", p.value)]
        elif p.op in ("<", "<=", ">", ">="):
            values = [(p.op, p.value)]
        elif p.op == "in" and p.value:
            vals = [v for v in p.value if v is not None]
            if vals:
                values = [(">=", min(vals)), ("<=", max(vals))]
        for op, v in values:
            if op in (">", ">="):
                inclusive = op == ">="
                if low is None or v > low or (v == low and not inclusive):
                    low, low_inc = v, inclusive
            else:
                inclusive = op == "<="
                if high is None or v < high or (v == high and not inclusive):
                    high, high_inc = v, inclusive
    return low, low_inc, high, high_inc
