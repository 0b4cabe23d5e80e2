"""Row predicates without Spark: what the Spark layer pushes down and what option filters become.

A :class:`Predicate` is one column-versus-literal test. A reader receives a list of them, AND-ed. Decoders may use
them to skip work (a file whose LSN range cannot match, a rows event of an unwanted table), but exactness comes from
:func:`apply_predicates`, which evaluates them on every output batch with pyarrow.compute with SQL semantics
(a comparison with NULL is not true, so such rows are dropped; ``<=>`` and IS NULL see NULLs).

Corrupt-record rows (PERMISSIVE) have null data columns, so a filter on those columns drops them, as Spark's own
sources do. That is never silent: :func:`apply_predicates` given the corrupt-record column logs what it dropped,
and :class:`CorruptTally` lets a reader say how many such rows a split made (Spark applies the filters it was
not given after the read, out of our sight).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

log = logging.getLogger(__name__)

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
            return bool(value == self.value)
        if value is None or (self.value is None and self.op != "in"):
            return False
        if self.op == "=":
            return bool(value == self.value)
        if self.op == "in":
            return value in self.value
        if self.op == "<":
            return bool(value < self.value)
        if self.op == "<=":
            return bool(value <= self.value)
        if self.op == ">":
            return bool(value > self.value)
        if self.op == ">=":
            return bool(value >= self.value)
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
                     keep_rows_with: str | None = None, corrupt_column: str | None = None) -> pa.RecordBatch:
    """Rows of ``batch`` for which every predicate is true (all of them, exactly).

    ``keep_rows_with``: a column whose non-null rows are kept whatever the predicates say (the corrupt-record
    column, for filters given as reader options). ``corrupt_column``: the corrupt-record column, whose rows
    the predicates drop (filters Spark pushed must be exact) with a warning giving their count and the first.
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
    if corrupt_column is not None:
        _warn_dropped_corrupt(batch, mask, corrupt_column, predicates)
    return batch.filter(mask)


def _warn_dropped_corrupt(batch: pa.RecordBatch, mask: pa.Array, column: str,
                          predicates: Sequence[Predicate]) -> None:
    corrupt = batch.column(column)
    dropped = corrupt.filter(pc.and_(pc.is_valid(corrupt), pc.invert(mask)))
    if len(dropped):
        log.warning("%d corrupt record%s dropped by the filter %s, which their null columns do not satisfy "
                    "(first: %s); query %s IS NOT NULL without that filter to see them", len(dropped),
                    "" if len(dropped) == 1 else "s", " AND ".join(map(describe, predicates)), dropped[0].as_py(),
                    column)


def describe(predicate: Predicate) -> str:
    """``space_id >= 0``: a predicate as the user wrote it, for messages."""
    if predicate.op in ("is_null", "is_not_null"):
        return f"{predicate.column} {predicate.op.replace('_', ' ').upper()}"
    if predicate.op == "starts_with":
        return f"{predicate.column} LIKE '{predicate.value}%'"
    return f"{predicate.column} {predicate.op.upper()} {predicate.value!r}"


class CorruptTally:
    """Counts the corrupt-record rows of one split's batches and logs them once (see the module docstring)."""

    def __init__(self, column: str | None) -> None:
        self.column = column
        self.rows = 0
        self.first: str | None = None

    def count(self, batch: pa.RecordBatch) -> None:
        if self.column is None or self.column not in batch.schema.names:
            return
        values = batch.column(self.column)
        n = len(values) - values.null_count
        if n:
            self.rows += n
            if self.first is None:
                self.first = values.filter(pc.is_valid(values))[0].as_py()

    def warn_kept(self) -> None:
        """One warning for the split, when it made corrupt-record rows (filters on data columns drop them)."""
        if self.rows:
            log.warning("%d corrupt record%s kept as row%s with %s set (first: %s); a filter on other columns "
                        "drops them, as their values are null", self.rows, "" if self.rows == 1 else "s",
                        "" if self.rows == 1 else "s", self.column, self.first)


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
