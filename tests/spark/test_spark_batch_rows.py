"""The Spark batch read's rows per Arrow batch (docs/spark-speed.md): a larger default than ``iter_batches``,
unless the user chose ``batchSize``; ``readStream`` keeps the format's own."""

from __future__ import annotations

import pytest

from spark_logsource.spark.base import SPARK_BATCH_ROWS, LogReader
from spark_logsource.spark.sources import data_source


@pytest.mark.parametrize("fmt", ["tarantool-xlog", "mysql-binlog"])
def test_batch_read_uses_the_spark_batch_size_unless_set(fmt: str, tmp_path) -> None:
    source_cls = data_source(fmt)
    path = str(tmp_path / "log")
    default = source_cls({"path": path})
    reader = default.reader(default.schema())
    assert isinstance(reader, LogReader)
    assert reader.fmt.common.batch_size == SPARK_BATCH_ROWS != default._fmt.common.batch_size
    for key in ("batchSize", "batchsize"):  # Spark's options are case-insensitive
        chosen = source_cls({"path": path, key: "100"})
        assert chosen.reader(chosen.schema()).fmt.common.batch_size == 100
