"""The columnar JVM reader (``read_columnar``) from a Spark Connect client: the client plans (it has the files'
listing and the formats), the server's executors run the Python workers, and the rows equal the Arrow API's.
Run alone: ``pytest -m connect tests/deploy``."""

from __future__ import annotations

from typing import Any

import pytest

from spark_logsource.spark.columnar import arrow_pipe_jar, read_columnar
from tests.support.deploy import Dataset, expected_rows, spark_rows

pytestmark = pytest.mark.connect


@pytest.mark.parametrize("name", ["binlog", "yugabyte"])
def test_columnar_read_from_a_connect_client_equals_the_arrow_api(connect_spark: Any, datasets: dict[str, Dataset],
                                                                  name: str) -> None:
    assert arrow_pipe_jar() is not None, "jars/arrow-pipe.jar is not built (scripts/setup.sh builds it)"
    data = datasets[name]
    df = read_columnar(connect_spark, data.fmt, str(data.path), **data.options)
    assert spark_rows(df) == expected_rows(data)
    assert df.count() == len(expected_rows(data))
