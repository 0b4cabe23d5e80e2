"""The Spark session the streaming benchmarks share: local[2], no UI, UTC, the package's data sources registered."""

from __future__ import annotations

import os
import sys


def spark_session():
    from pyspark.sql import SparkSession

    import spark_logsource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_logsource.register(spark)
    return spark
