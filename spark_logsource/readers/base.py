"""Spark data sources built from a :class:`~spark_logsource.logformat.LogFormat` (thin: no decoding here)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_logsource.filters import Predicate
from spark_logsource.logformat import LogFormat, Split
from spark_logsource.readers.compat import Filter, called_for_pushdown
from spark_logsource.readers.pushdown import to_predicate
from spark_logsource.readers.schema import spark_schema


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

    def partitions(self) -> list[InputPartition]:
        splits = self.fmt.plan(self.fmt.list_files(), self.predicates)
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = partition.split if isinstance(partition, SplitPartition) else partition.value
        yield from self.fmt.read_split(split, self.predicates)


class PushdownLogReader(LogReader):
    """Same reader, used when Spark pushes filters: the ones we can apply exactly are kept and applied."""

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

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Parse now: a bad option fails at .load() with a message naming it, not later in a task.
        self._fmt = self.format_cls(dict(options))

    def schema(self) -> StructType:
        return spark_schema(self._fmt.schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        if called_for_pushdown():
            return PushdownLogReader(self._fmt)
        return LogReader(self._fmt)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream``: the format's :meth:`~spark_logsource.logformat.LogFormat.stream` (a batch-only
        format raises an OptionError saying so). Cheap and free of I/O: Spark calls it in several processes."""
        from spark_logsource.readers.stream_reader import make_stream_reader

        return make_stream_reader(self._fmt.stream())
