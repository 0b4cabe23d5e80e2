"""One Spark data source class per registered format, made from the registry (no per-format module).

Each class is a :class:`~spark_logsource.spark.base.LogDataSource` naming its format, reachable as an attribute
of this module under a stable name (``mysql-binlog`` → ``MysqlBinlogDataSource``): Spark pickles a data source
by reference, so the class a worker unpickles is the one the driver registered. A format is imported only when
its class is first asked for.
"""

from __future__ import annotations

import functools

from spark_logsource.registry import format_class, format_names
from spark_logsource.spark.base import LogDataSource


def class_name(format_name: str) -> str:
    """The data source class's name for ``format_name``: ``mysql-binlog`` → ``MysqlBinlogDataSource``."""
    return "".join(part.capitalize() for part in format_name.split("-")) + "DataSource"


@functools.cache
def data_source(format_name: str) -> type[LogDataSource]:
    """The data source class of the registered format ``format_name``, made once per process."""
    fmt = format_class(format_name)
    name = class_name(fmt.name)
    summary = (fmt.__doc__ or "").strip().split("\n", 1)[0]
    attributes = {"format_cls": fmt, "__module__": __name__, "__qualname__": name,
                  "__doc__": f'``spark.read.format("{fmt.name}")``: {summary}'}
    return type(name, (LogDataSource,), attributes)


def data_sources() -> list[type[LogDataSource]]:
    """Every registered format's data source class, in the registry's (sorted) order."""
    return [data_source(name) for name in format_names()]


def __getattr__(attr: str) -> type[LogDataSource]:
    # pickle finds a class by its module and name: answer for every registered format's class name
    for name in format_names():
        if class_name(name) == attr:
            return data_source(name)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
