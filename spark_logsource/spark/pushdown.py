"""Spark's pushed filters → our :class:`~spark_logsource.filters.Predicate` (exactly, or not at all).

Whether Spark is pushing filters at all is :func:`spark_logsource.spark.compat.called_for_pushdown`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import datasource as sds

from spark_logsource.filters import Predicate

_SIMPLE_OPS = {
    "EqualTo": "=",
    "EqualNullSafe": "<=>",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _literal(value: Any) -> Any:
    # Spark sends TimestampType literals as datetimes; naive ones are in the session time zone, which the worker
    # does not know — we only accept aware ones (Spark 4 sends them aware, in UTC) and leave the rest to Spark.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        raise ValueError("naive datetime literal")
    return value


def to_predicate(f: sds.Filter) -> Predicate | None:
    """Our predicate for Spark filter ``f``, or None when we cannot express it exactly."""
    attr = getattr(f, "attribute", None)
    if not isinstance(attr, tuple) or len(attr) != 1:
        return None
    column = attr[0]
    name = type(f).__name__
    # dispatched on the class name (the classes differ between pyspark versions): ``value`` is read from the
    # subclasses that have one (EqualTo, In, StringStartsWith, ...); Filter itself declares no fields
    filt: Any = f
    try:
        if name in _SIMPLE_OPS:
            return Predicate(column, _SIMPLE_OPS[name], _literal(filt.value))
        if name == "In":
            return Predicate(column, "in", tuple(_literal(v) for v in filt.value))
        if name == "IsNull":
            return Predicate(column, "is_null")
        if name == "IsNotNull":
            return Predicate(column, "is_not_null")
        if name == "StringStartsWith":
            return Predicate(column, "starts_with", filt.value)
    except (ValueError, TypeError):
        return None
    return None
