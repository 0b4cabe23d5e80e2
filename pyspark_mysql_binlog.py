"""Spark's auto-registration entry point for the ``mysql-binlog`` format (Spark imports ``pyspark_*`` modules)."""

from spark_logsource.readers.mysql_binlog import MysqlBinlogDataSource as DefaultSource

__all__ = ["DefaultSource"]
