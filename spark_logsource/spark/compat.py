"""Shims over what differs between pyspark versions or is not exposed by its API, in one place.

Each shim names what it relies on; ``tests/spark/test_compat.py`` checks those facts on the installed pyspark and
fails loudly when a new release changes them.

Filter pushdown: Spark 4.1+ calls ``DataSourceReader.pushFilters`` only when
``spark.sql.python.filterPushdown.enabled`` is true, and fails every query on a reader class that overrides it
while the conf is false (DATA_SOURCE_PUSHDOWN_DISABLED). The conf is not passed to the data source, but pushdown
runs in its own worker module (``pyspark/sql/worker/data_source_pushdown_filters.py``), which calls
``DataSource.reader()`` before ``pushFilters``. :func:`called_for_pushdown` looks for that module on the call
stack, so one format name works with the conf on (filters pushed, applied exactly) and off (Spark filters).
"""

from __future__ import annotations

import sys
from types import FrameType

__all__ = ["ALREADY_EXISTS_CONDITION", "PUSHDOWN_WORKER_FILE", "PUSHDOWN_WORKER_MODULE", "Filter",
           "called_for_pushdown", "is_already_registered_error"]

#: The file of Spark's filter-pushdown planning worker (pyspark 4.1 – 4.3).
PUSHDOWN_WORKER_FILE = "data_source_pushdown_filters.py"
#: Its module, imported by the tripwire test.
PUSHDOWN_WORKER_MODULE = "pyspark.sql.worker.data_source_pushdown_filters"


def called_for_pushdown() -> bool:
    """True when the current call comes from Spark's filter-pushdown planning worker."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(PUSHDOWN_WORKER_FILE):
            return True
        frame = frame.f_back
    return False


# ``pyspark.sql.datasource.Filter`` arrived with filter pushdown in 4.1. On 4.0 Spark never pushes filters, so a
# placeholder keeps the modules that name it (annotations of ``pushFilters``) importable there.
try:
    from pyspark.sql.datasource import Filter
except ImportError:  # pyspark 4.0

    class Filter:  # type: ignore[no-redef]
        """Placeholder on pyspark 4.0 (no filter pushdown: never instantiated)."""


#: Spark's error condition for registering a name it already has from its own auto-registration (the
#: ``pyspark_*`` modules it imports at start-up). pyspark 4.0 raises it; 4.1+ replace the source with a warning.
ALREADY_EXISTS_CONDITION = "DATA_SOURCE_ALREADY_EXISTS"


def is_already_registered_error(exc: BaseException) -> bool:
    """True when ``exc`` is Spark refusing to register a data source name it already has (pyspark 4.0)."""
    for getter in ("getCondition", "getErrorClass"):  # getCondition from 4.0; getErrorClass is its old name
        method = getattr(exc, getter, None)
        if callable(method):
            try:
                condition = method()
            except Exception:  # a captured JVM error whose gateway is gone: fall back to the message
                condition = None
            if condition:
                return bool(condition == ALREADY_EXISTS_CONDITION)
    return ALREADY_EXISTS_CONDITION in str(exc)
