"""``view=table`` through Spark: the declared Spark schema, the Arrow batches matching it, typed values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql.types import (
    BinaryType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from spark_logsource.api import make_format
from spark_logsource.spark.schema import spark_schema
from tests.support.mysql_typed import DB, FINAL_TABLE, TypedWorkload

pytestmark = pytest.mark.spark

EXPECTED_COLUMNS = {
    "id": LongType(), "ti": ByteType(), "uti": ShortType(), "si": IntegerType(), "usi": IntegerType(),
    "mi": IntegerType(), "umi": IntegerType(), "ui": LongType(), "bi": LongType(), "ubi": DecimalType(20, 0),
    "f": FloatType(), "d": DoubleType(), "amount": DecimalType(10, 2), "big": DecimalType(30, 10),
    "dt": TimestampNTZType(), "ts": TimestampType(), "dd": DateType(), "tm": StringType(), "yr": IntegerType(),
    "vc": StringType(), "ch": StringType(), "tx": StringType(), "vb": BinaryType(), "bl": BinaryType(),
    "e": StringType(), "st": StringType(), "b": BinaryType(), "j": VariantType(), "g": BinaryType(),
    "note": StringType(), "label": StringType(), "memo": StringType(),
}


def test_table_view_in_spark(spark: Any, typed_workloads: dict[str, TypedWorkload]) -> None:
    w = typed_workloads["MINIMAL"]
    paths = [str(f) for f in w.files]
    df = (spark.read.format("mysql-binlog").option("view", "table").option("table", f"{DB}.{FINAL_TABLE}")
          .load(paths))
    after = df.schema["after"].dataType
    assert isinstance(after, StructType) and df.schema["before"].dataType == after
    assert {f.name: f.dataType for f in after.fields} == EXPECTED_COLUMNS  # union: dropped and renamed ones too
    assert [f.name for f in df.schema.fields] == ["op", "before", "after", "source", "seq", "_corrupt_record"]
    assert [f.name for f in df.schema["source"].dataType.fields] == [
        "file", "pos", "row_index", "timestamp", "server_id", "gtid", "xid", "database", "table"]

    # the first Arrow batch is exactly the declared schema (field metadata included), and Spark's schema is its own
    fmt = make_format("mysql-binlog", paths, {"view": "table", "table": f"{DB}.{FINAL_TABLE}"})
    first = next(iter(fmt.iter_batches()))
    assert first.schema.equals(fmt.schema(), check_metadata=True)
    assert spark_schema(first.schema) == df.schema

    rows = sorted(df.selectExpr(
        "source.file AS file", "source.pos AS pos", "source.row_index AS row_index", "op", "after.id AS id",
        "after.ubi AS ubi", "after.ts AS ts", "after.dt AS dt",
        "variant_get(after.j, '$.k[1]', 'decimal(3,1)') AS k1", "after.label AS label").collect(),
        key=lambda r: (r["file"], r["pos"], r["row_index"]))
    assert [r["op"] for r in rows].count("u") == 12 and len(rows) == 19
    first_row = w.snapshots[0].rows[1]
    assert rows[0]["ubi"] == Decimal(first_row["ubi"]) and rows[0]["k1"] == Decimal("2.5")
    assert rows[0]["dt"] == first_row["dt"] and rows[0]["ts"].replace(tzinfo=None) == first_row["ts"]
    assert [r["label"] for r in rows if r["id"] == 5] == ["fünf", "fünf", "fünf"]


@pytest.mark.parametrize("metadata", ["NO_LOG", "FULL"])
def test_columnar_reader_gives_every_typed_value_as_the_data_source_does(
        spark: Any, typed_workloads: dict[str, TypedWorkload], metadata: str) -> None:
    """Every type of the workload (negative decimals of ≤ 18 digits, which the columnar reader reads as longs, and
    wider ones, which it reads as Spark does) through ``read_columnar``, value for value against the data source."""
    from pyspark.sql import functions as F

    from spark_logsource.spark.columnar import arrow_pipe_jar, read_columnar

    if arrow_pipe_jar() is None:
        pytest.skip("jars/arrow-pipe.jar is not built (tests/spark/test_columnar.py says why, or fails in CI)")
    paths = [str(f) for f in typed_workloads[metadata].files]
    options = {"view": "table", "table": f"{DB}.{FINAL_TABLE}"}
    ours = read_columnar(spark, "mysql-binlog", paths, **options)
    theirs = spark.read.format("mysql-binlog").options(**options).load(paths)
    assert ours.schema == theirs.schema
    for image in ("before", "after"):
        columns = [F.col(f"{image}.{f.name}").cast("string").alias(f.name) for f in ours.schema[image].dataType.fields]
        keyed = [F.col("seq").cast("string").alias("seq"), *columns]
        got, want = ours.select(*keyed).collect(), theirs.select(*keyed).collect()
        assert sorted(map(tuple, got)) == sorted(map(tuple, want)) and len(got) > 5
    amounts = {r.amount for r in ours.select("after.amount").collect() if r.amount is not None}
    assert Decimal("-12345678.90") in amounts  # a negative decimal(10,2): its low 8 bytes, sign-extended
