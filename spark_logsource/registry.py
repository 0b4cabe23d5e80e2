"""Format names → the modules that implement them.

The registry holds dotted names, not classes, so no base module imports a format (no import cycles) and a
format's code is imported only when it is used. Adding a format is one package plus one line in
:data:`FORMATS` (and, for Spark's auto-registration, a three-line ``pyspark_<name>.py`` shim).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from spark_logsource.errors import OptionError

if TYPE_CHECKING:
    from spark_logsource.logformat import LogFormat

#: ``spark.read.format(name)`` → ``"module:Class"`` of its :class:`~spark_logsource.logformat.LogFormat`.
FORMATS: dict[str, str] = {
    "tarantool-xlog": "spark_logsource.tarantool.format:TarantoolXlogFormat",
    "mysql-binlog": "spark_logsource.mysql.format:MysqlBinlogFormat",
    "mysql-replication": "spark_logsource.mysql.replication_format:MysqlReplicationFormat",
    "tarantool-replication": "spark_logsource.tarantool.replication_format:TarantoolReplicationFormat",
    "memcached-tap": "spark_logsource.memcached.format:MemcachedTapFormat",
    "yugabyte-wal": "spark_logsource.yugabyte.format:YugabyteWalFormat",
}


def format_names() -> list[str]:
    """Every registered format name, sorted."""
    return sorted(FORMATS)


def format_class(name: str) -> type[LogFormat]:
    """The format registered under ``name`` (case-insensitive), imported on first use."""
    target = FORMATS.get(name.lower())
    if target is None:
        raise OptionError("format", f"unknown format {name!r}; known formats: {', '.join(format_names())}")
    module_name, _, class_name = target.partition(":")
    cls: type[LogFormat] = getattr(importlib.import_module(module_name), class_name)
    if cls.name != name.lower():
        raise TypeError(f"{target} declares name {cls.name!r}, registered as {name!r}")
    return cls
