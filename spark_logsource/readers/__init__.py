"""Spark data sources (Python Data Source API) for every format of the package."""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.datasource import DataSource

from spark_logsource.readers.compat import is_already_registered_error

log = logging.getLogger(__name__)


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
    """Register every format on ``spark``; safe to call again and next to Spark's own auto-registration.

    Spark imports the ``pyspark_*`` modules at start-up and registers their ``DefaultSource`` under the same names
    (``docs/ARCHITECTURE.md``, adding a format). pyspark 4.0 refuses to register such a name a second time
    (``DATA_SOURCE_ALREADY_EXISTS``): the source it holds is ours already, so that refusal is kept as success.
    pyspark 4.1+ replace the source instead; calling this twice registers the same classes again.
    """
    for cls in data_sources():
        try:
            spark.dataSource.register(cls)
        except Exception as exc:
            if not is_already_registered_error(exc):
                raise
            log.debug("data source %r already registered by Spark's auto-registration: kept", cls.name())
