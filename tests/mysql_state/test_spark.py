"""``view=state`` through Spark: several partitions, the declared schema, the server's rows."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    IntegerType,
    StringType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from tests.mysql_state.conftest import DB, StateWorkload

pytestmark = pytest.mark.spark


def _spark_rows(spark: Any, paths: list[str], **options: Any) -> tuple[Any, list[dict[str, Any]]]:
    reader = spark.read.format("mysql-binlog").option("view", "state").option("table", f"{DB}.items")
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(paths)
    # the session's time zone is UTC: a TIMESTAMP printed there is the server's (UTC) value; JSON as its text
    rows = df.selectExpr("*", "date_format(stamp, 'yyyy-MM-dd HH:mm:ss.SSS') AS stamp_text",
                         "to_json(doc) AS doc_text").drop("stamp", "doc").collect()
    return df, [r.asDict() for r in rows]


def _server_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    stamp, doc = out.pop("stamp"), out.pop("doc")
    out["stamp_text"] = None if stamp is None else stamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    out["doc_text"] = None if doc is None else json.loads(doc, parse_float=Decimal)
    return out


def _ours(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    assert out.pop("_corrupt_record") is None
    out["doc_text"] = None if out["doc_text"] is None else json.loads(out["doc_text"], parse_float=Decimal)
    return out


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return row["region"], row["id"]


def test_state_in_spark_equals_select(spark: Any, state_workload: StateWorkload) -> None:
    w = state_workload
    assert w.final is not None and w.middle is not None
    paths = [str(f) for f in w.files]
    df, rows = _spark_rows(spark, paths, statePartitions=3)
    assert df.rdd.getNumPartitions() == 3
    types = {f.name: f.dataType for f in df.schema.fields}
    assert list(types) == [*w.final.tables["items"][0], "_corrupt_record"]
    assert types["id"] == IntegerType() and types["qty"] == IntegerType()  # SMALLINT UNSIGNED
    assert types["price"] == DecimalType(12, 3) and types["seen_at"] == TimestampNTZType()
    assert types["stamp"] == TimestampType() and types["doc"] == VariantType()
    assert types["blob_"] == BinaryType() and types["note"] == StringType()
    ours = sorted((_ours(r) for r in rows), key=_key)
    server = sorted((_server_row(r) for r in w.final.tables["items"]), key=_key)
    assert ours == server
    assert any(isinstance(r["seen_at"], dt.datetime) for r in ours) and any(r["blob_"] for r in ours)

    # asOf the middle point, by position: the layout then (no note column) and the rows then
    df, rows = _spark_rows(spark, paths, statePartitions=2, asOf=f"{w.middle.file}:{w.middle.pos}")
    assert df.rdd.getNumPartitions() == 2 and "note" not in df.columns
    assert sorted((_ours(r) for r in rows), key=_key) == sorted(
        (_server_row(r) for r in w.middle.tables["items"]), key=_key)
