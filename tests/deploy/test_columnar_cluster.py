"""The columnar JVM reader (``read_columnar``, ``jars/arrow-pipe``) on a Spark standalone cluster: the jar shipped by
``spark.jars``, each executor's tasks served by Python workers of its own (``spark.pyspark.python``), the splits
spread over both executors and the rows equal to the Arrow API's. Run alone: ``pytest -m cluster tests/deploy``."""

from __future__ import annotations

import os
from typing import Any

import pytest

from spark_logsource.spark.columnar import arrow_pipe_jar, read_columnar
from tests.support.deploy import Dataset, expected_rows, spark_rows

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("name", ["binlog", "xlog"])
def test_columnar_read_on_both_executors_equals_the_arrow_api(cluster_spark: Any, datasets: dict[str, Dataset],
                                                              name: str) -> None:
    from pyspark.sql import functions as F

    assert arrow_pipe_jar() is not None, "jars/arrow-pipe.jar is not built (scripts/setup.sh builds it)"
    data = datasets[name]
    df = read_columnar(cluster_spark, data.fmt, str(data.path), **data.options)
    # an executor's working directory is named by its id (work-dir/app-id/executor-id)
    executor = F.udf(lambda: os.path.basename(os.getcwd()), "string").asNondeterministic()
    tagged = df.select(*df.columns, executor().alias("_test_executor"))
    assert {r["_test_executor"] for r in tagged.select("_test_executor").collect()} == {"0", "1"}
    assert df.rdd.getNumPartitions() >= data.min_splits
    assert spark_rows(df) == expected_rows(data)
