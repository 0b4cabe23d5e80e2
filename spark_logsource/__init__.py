"""spark-logsource: databases' replication logs as Spark DataFrames and Arrow tables.

Without Spark::

    import spark_logsource
    table = spark_logsource.read("tarantool-xlog", "/var/lib/tarantool/")
    for batch in spark_logsource.iter_batches("mysql-binlog", "/var/lib/mysql/binlog.000042", view="events"):
        ...

With Spark, the formats ``tarantool-xlog`` and ``mysql-binlog`` are found after ``pip install`` (Spark imports
the top-level ``pyspark_*`` modules); :func:`register` registers them explicitly on a session.
"""

from __future__ import annotations

from typing import Any

from spark_logsource.api import follow, iter_batches, read
from spark_logsource.errors import (
    AuthenticationError,
    ChecksumError,
    CorruptDataError,
    DataLossError,
    EncryptedBinlogError,
    LogSourceError,
    OptionError,
    SourceError,
    StorageError,
    TruncatedDataError,
    UnavailableError,
    UnsupportedDataError,
)

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "ChecksumError",
    "CorruptDataError",
    "DataLossError",
    "EncryptedBinlogError",
    "LogSourceError",
    "OptionError",
    "SourceError",
    "StorageError",
    "TruncatedDataError",
    "UnavailableError",
    "UnsupportedDataError",
    "follow",
    "iter_batches",
    "read",
    "register",
]


def register(spark: Any) -> None:
    """Register every format of this package on ``spark`` (a SparkSession)."""
    from spark_logsource.spark import register_all

    register_all(spark)
