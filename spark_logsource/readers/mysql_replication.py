"""``spark.read.format("mysql-replication")`` / ``readStream``: a live MySQL / MariaDB server, read as a replica."""

from spark_logsource.mysql.replication_format import MysqlReplicationFormat
from spark_logsource.readers.base import LogDataSource


class MysqlReplicationDataSource(LogDataSource):
    format_cls = MysqlReplicationFormat
