"""Spark auto-registration entry point for the ``mysql-replication`` format (Spark imports ``pyspark_*``)."""

from spark_logsource.readers.mysql_replication import MysqlReplicationDataSource as DefaultSource

__all__ = ["DefaultSource"]
