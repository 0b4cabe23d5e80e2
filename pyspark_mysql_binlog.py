"""Spark's auto-registration entry point for the ``mysql-binlog`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.spark.sources import data_source

DefaultSource = data_source("mysql-binlog")

__all__ = ["DefaultSource"]
