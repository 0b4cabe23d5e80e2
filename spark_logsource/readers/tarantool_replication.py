"""``spark.read.format("tarantool-replication")`` / ``readStream``: a live Tarantool server as an anonymous replica."""

from spark_logsource.readers.base import LogDataSource
from spark_logsource.tarantool.replication_format import TarantoolReplicationFormat


class TarantoolReplicationDataSource(LogDataSource):
    format_cls = TarantoolReplicationFormat
