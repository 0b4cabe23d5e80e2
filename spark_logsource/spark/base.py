"""Spark data sources built from a :class:`~spark_logsource.logformat.LogFormat` (thin: no decoding here).

Our errors reach the user inside Spark's exception, after the Python traceback of the worker that raised them:
every entry point Spark calls re-raises them with no traceback of their own and no chain (:func:`short_errors`),
so the message is one frame below Spark's header instead of five to twenty-five.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_logsource.errors import LogSourceError
from spark_logsource.filters import CorruptTally, Predicate
from spark_logsource.logformat import LogFormat, Split
from spark_logsource.spark.compat import Filter, called_for_pushdown
from spark_logsource.spark.pushdown import to_predicate
from spark_logsource.spark.schema import spark_schema

F = TypeVar("F", bound=Callable[..., Any])


def short_errors(method: F) -> F:
    """``method`` (called by Spark), raising our errors without their traceback and chain: the frames below
    this one and the internal causes add nothing to a message that names the file and offset or the option."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except LogSourceError as exc:
            raise exc.with_traceback(None) from None

    return call  # type: ignore[return-value]


def short_error_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`short_errors` for the batches a task yields."""
    try:
        yield from batches
    except LogSourceError as exc:
        raise exc.with_traceback(None) from None


def tallied(batches: Iterator[pa.RecordBatch], corrupt_column: str | None) -> Iterator[pa.RecordBatch]:
    """``batches``, then one warning when they held corrupt-record rows.

    A corrupt-record row has null data columns: a filter Spark applies itself drops it, unseen by us, so every
    task that made some says so once (a filter we apply reports what it drops: ``filters.apply_predicates``).
    """
    tally = CorruptTally(corrupt_column)
    for batch in batches:
        tally.count(batch)
        yield batch
    tally.warn_kept()


class SplitPartition(InputPartition):
    """One split, pickled into one Spark task."""

    def __init__(self, split: Split) -> None:
        super().__init__(split)
        self.split = split


class LogReader(DataSourceReader):
    """Reads splits planned by a format. Spark filters everything itself (no pushdown)."""

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt
        self.predicates: list[Predicate] = []

    @short_errors
    def partitions(self) -> list[InputPartition]:
        splits = self.fmt.plan(self.fmt.list_files(), self.predicates)
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = partition.split if isinstance(partition, SplitPartition) else partition.value
        if split is None:  # no split planned (an empty directory): Spark still reads one empty partition
            return iter(())
        batches = self.fmt.read_split(split, self.predicates)
        return short_error_batches(tallied(batches, self.fmt.common.corrupt_column_or_none))


class PushdownLogReader(LogReader):
    """Same reader, used when Spark pushes filters: the ones we can apply exactly are kept and applied."""

    @short_errors
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        rejected = []
        for f in filters:
            predicate = to_predicate(f)
            if predicate is not None and self.fmt.can_push(predicate):
                self.predicates.append(predicate)
            else:
                rejected.append(f)
        return rejected


class LogDataSource(DataSource):
    """Base of our data sources: a subclass names its :class:`LogFormat` in ``format_cls``."""

    format_cls: type[LogFormat]

    @classmethod
    def name(cls) -> str:
        return cls.format_cls.name

    @short_errors
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Parse now: a bad option fails at .load() with a message naming it, not later in a task.
        self._fmt = self.format_cls(dict(options))

    @short_errors
    def schema(self) -> StructType:
        return spark_schema(self._fmt.schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        if called_for_pushdown():
            return PushdownLogReader(self._fmt)
        return LogReader(self._fmt)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream``: the format's :meth:`~spark_logsource.logformat.LogFormat.stream`. Cheap and free of
        I/O: Spark calls it in several processes.

        Spark builds the data source of ``readStream.load()`` exactly as that of ``read.load()`` (nothing tells
        the two apart), so what cannot be streamed (a batch-only format or view) is refused here, at ``start()``.
        Raising here would be hidden by pyspark's source runner, which then calls ``stop()`` on a reader it never
        got (an UnboundLocalError): the refusal is a reader whose first call raises the error, alone.
        """
        from spark_logsource.spark.stream_reader import RefusedStreamReader, make_stream_reader

        try:
            stream = self._fmt.stream()
        except LogSourceError as exc:
            return RefusedStreamReader(exc)
        return make_stream_reader(stream)
