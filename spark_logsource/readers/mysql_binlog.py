"""``spark.read.format("mysql-binlog")``: MySQL / MariaDB binary logs."""

from spark_logsource.mysql.format import MysqlBinlogFormat
from spark_logsource.readers.base import LogDataSource


class MysqlBinlogDataSource(LogDataSource):
    format_cls = MysqlBinlogFormat
