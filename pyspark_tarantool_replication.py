"""Spark auto-registration entry point for the ``tarantool-replication`` format (Spark imports ``pyspark_*``)."""

from spark_logsource.readers.tarantool_replication import TarantoolReplicationDataSource as DefaultSource

__all__ = ["DefaultSource"]
