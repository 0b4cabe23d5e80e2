"""Spark's auto-registration entry point for the ``mysql-replication`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.spark.sources import data_source

DefaultSource = data_source("mysql-replication")

__all__ = ["DefaultSource"]
