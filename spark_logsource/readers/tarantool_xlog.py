"""``spark.read.format("tarantool-xlog")``: Tarantool .xlog / .snap / .vylog files."""

from spark_logsource.readers.base import LogDataSource
from spark_logsource.tarantool.format import TarantoolXlogFormat


class TarantoolXlogDataSource(LogDataSource):
    format_cls = TarantoolXlogFormat
