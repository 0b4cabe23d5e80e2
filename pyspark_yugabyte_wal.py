"""Spark's auto-registration entry point for the ``yugabyte-wal`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.readers.yugabyte_wal import YugabyteWalDataSource as DefaultSource

__all__ = ["DefaultSource"]
