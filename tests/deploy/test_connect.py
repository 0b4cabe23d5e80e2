"""Over Spark Connect (``remote("local[2]")``, the way Databricks serverless and shared clusters run PySpark):
the formats are found without ``register()``, batch reads of several splits equal the Arrow API's rows, and a
stream into Parquet is exactly once. Run alone: ``pytest -m connect tests/deploy``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.deploy import Dataset, expected_rows, read_df, spark_rows, splits_read, stream_into_parquet

pytestmark = pytest.mark.connect


def test_the_session_is_a_connect_client(connect_spark: Any) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect_spark, ConnectSession)


@pytest.mark.parametrize("name", ["binlog", "xlog", "yugabyte"])
def test_batch_read_of_several_splits_equals_the_arrow_api(connect_spark: Any, datasets: dict[str, Dataset],
                                                           name: str) -> None:
    data = datasets[name]
    df = read_df(connect_spark, data)
    assert splits_read(df) >= data.min_splits
    assert spark_rows(df) == expected_rows(data)


def test_read_stream_into_parquet_is_exactly_once(connect_spark: Any, tmp_path: Path) -> None:
    outcome = stream_into_parquet(connect_spark, tmp_path)
    assert 0 < outcome.before_restart < len(outcome.expected)
    assert len(set(outcome.rows)) == len(outcome.rows), "no row twice"
    assert outcome.rows == outcome.expected
