"""Spark's auto-registration entry point for the ``yugabyte-wal`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.spark.sources import data_source

DefaultSource = data_source("yugabyte-wal")

__all__ = ["DefaultSource"]
