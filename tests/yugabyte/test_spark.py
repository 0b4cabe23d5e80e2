"""``spark.read.format("yugabyte-wal")`` on the fixture WALs, compared with the fixtures' expected records."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chispa import assert_df_equality

from spark_logsource.spark.sources import data_source
from tests.support.spark import filter_pushdown
from tests.yugabyte.conftest import Expected

pytestmark = pytest.mark.spark

#: The tablet whose segment has a bad CRC in the middle (YugabyteDB reports corruption there).
DAMAGED_TABLET = "fdae9d6b7d4d7d370c082f8c452f28aa"
OP_SCHEMA = "table_id string, tablet_id string, term long, index long, hybrid_time long, op_type string, " \
            "superseded boolean"
OP_COLUMNS = [c.split()[0] for c in OP_SCHEMA.split(", ")]


@pytest.fixture(scope="module")
def yb_spark(spark: Any) -> Any:
    spark.dataSource.register(data_source("yugabyte-wal"))
    return spark


@pytest.fixture
def pushdown(yb_spark: Any, request: pytest.FixtureRequest) -> Iterator[bool]:
    with filter_pushdown(yb_spark, request.param) as enabled:
        yield enabled


def expected_ops(segments: list[Expected]) -> list[tuple[Any, ...]]:
    out = []
    for exp in segments:
        for e in exp.entries:
            out.append((exp.segment["table_id"], exp.segment["tablet_id"], e["op_id"]["term"], e["op_id"]["index"],
                        e["hybrid_time"]["value"], e["op_type"], e["superseded_by"] is not None))
    return out


def test_operations_of_every_tablet(yb_spark: Any, wal_dir: Any, expected_segments: list[Expected]) -> None:
    df = (yb_spark.read.format("yugabyte-wal").option("includeSuperseded", "true").option("mode", "DROPMALFORMED")
          .load(str(wal_dir)).where(f"tablet_id != '{DAMAGED_TABLET}'").select(*OP_COLUMNS))
    rows = [r for r in expected_ops(expected_segments) if r[1] != DAMAGED_TABLET]
    expected = yb_spark.createDataFrame(rows, OP_SCHEMA)
    assert expected.count() == 38
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)


def test_write_ops_per_table(yb_spark: Any, wal_dir: Any, expected_segments: list[Expected]) -> None:
    ops = yb_spark.read.format("yugabyte-wal").option("mode", "DROPMALFORMED").load(str(wal_dir))
    got = {r["table_id"]: r["count"] for r in
           ops.where(f"op_type = 'WRITE_OP' and tablet_id != '{DAMAGED_TABLET}'").groupBy("table_id").count()
           .collect()}
    want: dict[str, int] = {}
    for exp in expected_segments:
        if exp.segment["tablet_id"] == DAMAGED_TABLET:
            continue
        for e in exp.entries:
            if e["op_type"] == "WRITE_OP" and e["superseded_by"] is None:
                want[exp.segment["table_id"]] = want.get(exp.segment["table_id"], 0) + 1
    assert got == want and sum(want.values()) == 20


@pytest.mark.parametrize("pushdown", [False, True], indirect=True, ids=["pushdown-off", "pushdown-on"])
def test_filter_on_tablet_index_and_op_type(yb_spark: Any, wal_dir: Any, expected_segments: list[Expected],
                                            pushdown: bool) -> None:
    tablet = "5ba68dd7a2803d1dd057e02036f41959"
    df = (yb_spark.read.format("yugabyte-wal").option("includeSuperseded", "true").load(str(wal_dir))
          .where(f"tablet_id = '{tablet}' and index >= 5 and index < 13 and op_type in ('WRITE_OP', 'NO_OP')")
          .select(*OP_COLUMNS))
    rows = [r for r in expected_ops(expected_segments)
            if r[1] == tablet and 5 <= r[3] < 13 and r[5] in ("WRITE_OP", "NO_OP")]
    assert len(rows) == 8
    assert_df_equality(df, yb_spark.createDataFrame(rows, OP_SCHEMA), ignore_row_order=True, ignore_nullable=True)


def test_writes_view_packed_columns_through_variant(yb_spark: Any, wal_dir: Any,
                                                    expected_segments: list[Expected]) -> None:
    df = (yb_spark.read.format("yugabyte-wal").option("view", "writes").option("mode", "DROPMALFORMED")
          .load(str(wal_dir)).where("kind = 'insert_packed'")
          .selectExpr("index", "tablet_id", "variant_get(doc_key, '$.key.order_id', 'long') as order_id",
                      "variant_get(value, '$.customer', 'string') as customer",
                      "variant_get(value, '$.qty', 'int') as qty", "variant_get(value, '$.price', 'double') as price"))
    rows = []
    for exp in expected_segments:
        for r in exp.rows:
            if r["kind"] == "insert_packed" and not r["superseded"]:
                c = r["columns"]
                rows.append((r["op_id"]["index"], exp.segment["tablet_id"], r["key"]["order_id"], c["customer"],
                             c["qty"], c["price"]))
    expected = yb_spark.createDataFrame(
        rows, "index long, tablet_id string, order_id long, customer string, qty int, price double")
    assert expected.count() == 11
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
