"""The typed views through Spark: same rows as the Arrow API, typed Spark columns, state split by key."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql.types import BinaryType, DecimalType, DoubleType, LongType, StringType, VariantType

import spark_logsource
from tests.support.tarantool_typed import plain_row


def test_space_and_state_views_in_spark(spark, typed_workload, captures):
    path = str(typed_workload.directory)
    space = spark.read.format("tarantool-xlog").option("view", "space").option("space", "users").load(path)
    types = {f.name: f.dataType for f in space.schema.fields}
    assert types["id"] == LongType() and types["name"] == StringType() and types["score"] == DoubleType()
    assert types["balance"] == DecimalType(38, 18) and types["blob"] == BinaryType()
    assert types["tags"] == VariantType() and types["extra_fields"] == VariantType()
    per_op = {r["op"]: r["n"] for r in space.groupBy("op").count().withColumnRenamed("count", "n").collect()}
    arrow = spark_logsource.read("tarantool-xlog", path, view="space", space="users")
    assert sum(per_op.values()) == arrow.num_rows
    assert per_op["UPDATE"] == arrow.column("op").to_pylist().count("UPDATE")

    middle = captures[1]
    state = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "users")
             .option("asOfLsn", str(middle.lsn)).option("statePartitions", "3").load(path))
    assert state.rdd.getNumPartitions() == 3
    rows = {r["id"]: r for r in state.selectExpr("id", "name", "balance", "email",
                                                   "variant_get(attrs, '$.k', 'string') AS k").collect()}
    expected = {t[0]: t for t in middle.tuples["users"]}
    assert set(rows) == set(expected)
    for key, tup in expected.items():
        assert rows[key]["name"] == tup[1] and rows[key]["balance"] == Decimal(tup[6])
        assert rows[key]["email"] == (tup[13] if len(tup) > 13 else None)
        assert rows[key]["k"] == tup[10].get("k")
    arrow_state = [plain_row(r) for r in spark_logsource.read("tarantool-xlog", path, view="state", space="users",
                                                             asOfLsn=middle.lsn).to_pylist()]
    assert sorted(r["id"] for r in arrow_state) == sorted(rows)
