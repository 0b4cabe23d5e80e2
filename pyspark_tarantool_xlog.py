"""Spark's auto-registration entry point for the ``tarantool-xlog`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.readers.tarantool_xlog import TarantoolXlogDataSource as DefaultSource

__all__ = ["DefaultSource"]
