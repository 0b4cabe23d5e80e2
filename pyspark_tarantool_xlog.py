"""Spark's auto-registration entry point for the ``tarantool-xlog`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.spark.sources import data_source

DefaultSource = data_source("tarantool-xlog")

__all__ = ["DefaultSource"]
