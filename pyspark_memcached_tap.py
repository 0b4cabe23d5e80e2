"""Spark's auto-registration entry point for the ``memcached-tap`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.spark.sources import data_source

DefaultSource = data_source("memcached-tap")

__all__ = ["DefaultSource"]
