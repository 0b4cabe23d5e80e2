"""A Spark session for one command-line query: local (or a given master), every format registered."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from spark_logsource.errors import QueryError
from spark_logsource.spark import register_all
from spark_logsource.spark.columnar import arrow_pipe_jar

#: A line naming one of our errors inside a Python traceback that Spark wraps into its own message.
_OUR_ERROR = re.compile(r"^spark_logsource\.errors\.\w+: (.+)$", re.MULTILINE)


@contextmanager
def local_spark(app_name: str, master: str | None, pushdown: bool, columnar: bool = False) -> Iterator[Any]:
    """A SparkSession with our formats registered and UTC as its time zone; stopped on exit."""
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.sql.python.filterPushdown.enabled", "true" if pushdown else "false")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    jar = arrow_pipe_jar() if columnar else None  # the columnar JVM reader, for `sql --columnar`, when built
    if jar is not None:  # only then: this setting replaces a spark.jars of spark-defaults.conf
        builder = builder.config("spark.jars", jar)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register_all(spark)
        yield spark
    except PySparkException as exc:
        raise query_error(exc) from None
    finally:
        spark.stop()


def query_error(exc: PySparkException) -> QueryError:
    """Spark's error as one line: our own error's message when a data source raised it in a Python worker, else
    Spark's error class and the first line of its message (the SQL text and the JVM stack stay out)."""
    text = str(exc)
    ours = _OUR_ERROR.findall(text)
    if ours:
        return QueryError(None, ours[-1].strip())
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return QueryError(exc.getCondition() if hasattr(exc, "getCondition") else exc.getErrorClass(), first)
