"""A Spark session for one command-line query: local (or a given master), every format registered."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from spark_logsource.readers import register_all


@contextmanager
def local_spark(app_name: str, master: str | None, pushdown: bool) -> Iterator[Any]:
    """A SparkSession with our formats registered and UTC as its time zone; stopped on exit."""
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.sql.python.filterPushdown.enabled", "true" if pushdown else "false")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register_all(spark)
        yield spark
    finally:
        spark.stop()
