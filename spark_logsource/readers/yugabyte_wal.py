"""``spark.read.format("yugabyte-wal")``: YugabyteDB tablet WAL segments (``wal-NNNNNNNNN``)."""

from spark_logsource.readers.base import LogDataSource
from spark_logsource.yugabyte.format import YugabyteWalFormat


class YugabyteWalDataSource(LogDataSource):
    format_cls = YugabyteWalFormat
