"""One MySQL / MariaDB table's changes, appended as they come, and a copy of the table kept by AUTO CDC.

The settings come from the pipeline's ``configuration`` (``spark-logsource.pipeline.*`` in spark-pipeline.yml); the
password from the environment variable ``MYSQL_CDC_PASSWORD``, so it is in no file. The formats need no
``register()``: Spark finds the installed ``pyspark_*`` modules of spark-logsource itself.

- ``changes``: a streaming table of the ``mysql-replication`` stream with ``view=table`` (``op``, ``before``,
  ``after``, ``source``, ``seq``; docs/formats/mysql-typed.md);
- ``flat_changes``: a view of them laid out flat (``op``, ``seq``, the table's columns), truncates left out;
- ``replica``: the table itself, kept by ``create_auto_cdc_flow`` (key and ``seq`` as the order), when
  ``spark-logsource.pipeline.autoCdc`` is true.
"""

from __future__ import annotations

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import expr

from spark_logsource.cdc import flat_view
from spark_logsource.errors import OptionError

PREFIX = "spark-logsource.pipeline."
PASSWORD_VARIABLE = "MYSQL_CDC_PASSWORD"

spark = SparkSession.active()


def setting(name: str, default: str | None = None) -> str:
    value = spark.conf.get(PREFIX + name, default)
    if value is None:
        raise OptionError(name, f"set {PREFIX}{name} in the pipeline's configuration (spark-pipeline.yml)")
    return value


KEY = setting("key", "id")
AUTO_CDC = setting("autoCdc", "true").lower() == "true"


@dp.table(name="changes", comment="the typed changes of one table, as the server logged them")
def changes() -> DataFrame:
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        raise OptionError("password", f"set the environment variable {PASSWORD_VARIABLE} to the account's password")
    # FAILFAST: a change that cannot be decoded stops the run instead of becoming a row without an image
    return (spark.readStream.format("mysql-replication").option("uri", setting("uri"))
            .option("password", password).option("view", "table").option("table", setting("table"))
            .option("startingPosition", setting("startingPosition", "earliest"))
            .option("serverId", setting("serverId", "4711")).option("mode", "FAILFAST").load())


@dp.temporary_view(name="flat_changes")
def flat_changes() -> DataFrame:
    # flat_view only adds projections: a query function may not look at a DataFrame's schema
    return flat_view(spark.readStream.table("changes"), [KEY]).where("op <> 't'")


if AUTO_CDC:
    dp.create_streaming_table("replica", comment="the table as of the last change read",
                              format=setting("targetFormat", "delta"))
    dp.create_auto_cdc_flow(target="replica", source="flat_changes", keys=[KEY], sequence_by="seq",
                            apply_as_deletes=expr("op = 'd'"), except_column_list=["op"], stored_as_scd_type=1)
