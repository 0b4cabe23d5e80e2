"""Spark data sources (Python Data Source API) for every format of the package."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource


def data_sources() -> list[type[DataSource]]:
    from spark_logsource.readers.memcached_tap import MemcachedTapDataSource
    from spark_logsource.readers.mysql_binlog import MysqlBinlogDataSource
    from spark_logsource.readers.mysql_replication import MysqlReplicationDataSource
    from spark_logsource.readers.tarantool_replication import TarantoolReplicationDataSource
    from spark_logsource.readers.tarantool_xlog import TarantoolXlogDataSource
    from spark_logsource.readers.yugabyte_wal import YugabyteWalDataSource

    return [TarantoolXlogDataSource, MysqlBinlogDataSource, MemcachedTapDataSource, YugabyteWalDataSource,
            TarantoolReplicationDataSource, MysqlReplicationDataSource]


def register_all(spark: Any) -> None:
    for cls in data_sources():
        spark.dataSource.register(cls)
