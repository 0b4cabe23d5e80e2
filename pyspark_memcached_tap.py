"""Spark's auto-registration entry point for the ``memcached-tap`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.readers.memcached_tap import MemcachedTapDataSource as DefaultSource

__all__ = ["DefaultSource"]
