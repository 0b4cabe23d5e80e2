"""Spark's pushed filters ↔ our :class:`~spark_logsource.filters.Predicate`.

Spark 4.1+ calls ``DataSourceReader.pushFilters`` only when ``spark.sql.python.filterPushdown.enabled`` is true,
and fails any query on a reader class that overrides it while the conf is false (DATA_SOURCE_PUSHDOWN_DISABLED).
The readers run in a Python worker that is not told the conf, but the worker that pushes filters is a different
module from the one that plans without them. :func:`called_for_pushdown` tells them apart by looking at the call
stack, so one format name works with the conf on (filters pushed) and off (Spark filters, we read everything).
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

from pyspark.sql import datasource as sds

from spark_logsource.filters import Predicate

_PUSHDOWN_WORKER_FILE = "data_source_pushdown_filters.py"

_SIMPLE_OPS = {
    "EqualTo": "=",
    "EqualNullSafe": "<=>",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def called_for_pushdown() -> bool:
    """True when the current call comes from Spark's filter-pushdown planning worker."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_PUSHDOWN_WORKER_FILE):
            return True
        frame = frame.f_back
    return False


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
    try:
        if name in _SIMPLE_OPS:
            return Predicate(column, _SIMPLE_OPS[name], _literal(f.value))
        if name == "In":
            return Predicate(column, "in", tuple(_literal(v) for v in f.value))
        if name == "IsNull":
            return Predicate(column, "is_null")
        if name == "IsNotNull":
            return Predicate(column, "is_not_null")
        if name == "StringStartsWith":
            return Predicate(column, "starts_with", f.value)
    except (ValueError, TypeError):
        return None
    return None
