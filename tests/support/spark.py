"""Spark session settings for one test: set a conf, restore what it was (the session is shared by the suite)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Whether Spark's Python data sources get pushed filters (``spark/compat.py`` serves both settings).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


@contextmanager
def spark_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` inside the block, back to the session's previous value (or unset) after it."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


@contextmanager
def filter_pushdown(spark: Any, enabled: bool) -> Iterator[bool]:
    """Python data source filter pushdown on or off inside the block."""
    with spark_conf(spark, PUSHDOWN_CONF, "true" if enabled else "false"):
        yield enabled
