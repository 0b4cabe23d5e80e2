"""The Arrow API: read logs without Spark.

>>> import spark_logsource
>>> table = spark_logsource.read("tarantool-xlog", "/var/lib/tarantool", spaceId=512, fromLsn=1000)
>>> for batch in spark_logsource.iter_batches("mysql-binlog", ["binlog.000001", "binlog.000002"], view="events"):
...     ...

Options are the Spark reader's options, as keyword arguments (any case; values may be Python values or strings).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from spark_logsource.logformat import LogFormat
from spark_logsource.registry import format_class


def make_format(fmt: str, paths: str | Sequence[str], options: dict[str, Any]) -> LogFormat:
    path_list = [paths] if isinstance(paths, str) else [str(p) for p in paths]
    opts = dict(options)
    opts["paths"] = path_list
    return format_class(fmt)(opts)


def iter_batches(fmt: str, paths: str | Sequence[str], **options: Any) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``paths`` as RecordBatches of the format's schema, in file order, streaming."""
    return make_format(fmt, paths, options).iter_batches()


def read(fmt: str, paths: str | Sequence[str], **options: Any) -> pa.Table:
    """Read ``paths`` whole into one :class:`pyarrow.Table` (same schema as :func:`iter_batches`)."""
    source = make_format(fmt, paths, options)
    return pa.Table.from_batches(list(source.iter_batches()), schema=source.schema())


def follow(
    fmt: str,
    paths: str | Sequence[str],
    *,
    poll_interval: float = 1.0,
    stop_when_idle: bool = False,
    **options: Any,
) -> Iterator[tuple[pa.RecordBatch, dict[str, Any] | None]]:
    """Follow a growing log (a directory being written, a live server): yield ``(batch, offset)`` as data arrives.

    ``offset`` is None, or the position to resume from once this batch and every earlier one are processed: one
    range of positions may give several batches, and only the last carries the range's end offset (a batch may
    end inside a transaction, which is no place to resume from). Commit your work together with each offset that
    is not None, and pass the last one committed back as ``startingPosition`` (its JSON text) to continue where
    a previous run stopped: every row once. A live server's URI may be given as ``paths``
    (``follow("mysql-replication", "mysql://cdc@db1:3306", password=...)``). With ``stop_when_idle`` the
    generator ends the first time nothing new is complete (like Spark's ``trigger(availableNow=True)``);
    otherwise it polls every ``poll_interval`` seconds until closed.
    """
    from spark_logsource.streaming.follow import follow_stream

    stream = make_format(fmt, paths, options).stream()
    return follow_stream(stream, poll_interval=poll_interval, stop_when_idle=stop_when_idle)
