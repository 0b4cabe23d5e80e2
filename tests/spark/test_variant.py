"""Spark reads our variant columns: a tiny Python data source returns Arrow batches built with
spark_logsource.arrow.columns, and Spark's own variant functions (running in the JVM) must give the right answer
for every value kind of spark_logsource.arrow.variant."""

from __future__ import annotations

import datetime
import math
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.arrow.columns import int64_column, string_column, variant_array_from_python, variant_field

pytestmark = pytest.mark.spark

PLUS2 = datetime.timezone(datetime.timedelta(hours=2))
WIDE = {f"k{i:03d}": i for i in range(300)} | {"a": 42, "é": 43, "Z": 44, "中": 45, "😀": 46}

# (python value, Spark to_json, Spark schema_of_variant, variant_get column to read, expected value there)
CASES: list[tuple[Any, str, str, str, Any]] = [
    (None, "null", "VOID", "as_string", None),
    (True, "true", "BOOLEAN", "as_boolean", True),
    (False, "false", "BOOLEAN", "as_boolean", False),
    (5, "5", "BIGINT", "as_bigint", 5),
    (-300, "-300", "BIGINT", "as_bigint", -300),
    (70000, "70000", "BIGINT", "as_bigint", 70000),
    (2**40, "1099511627776", "BIGINT", "as_bigint", 2**40),
    (2**70, "1180591620717411303424", "DECIMAL(22,0)", "as_decimal38_0", Decimal(2**70)),
    (10**40, '"1' + "0" * 40 + '"', "STRING", "as_string", "1" + "0" * 40),
    (1.5, "1.5", "DOUBLE", "as_double", 1.5),
    (-0.1, "-0.1", "DOUBLE", "as_double", -0.1),
    (math.inf, '"Infinity"', "DOUBLE", "as_double", math.inf),
    (Decimal("1.50"), "1.5", "DECIMAL(2,1)", "as_decimal10_2", Decimal("1.50")),
    (
        Decimal("-12345678901234.5678"),
        "-12345678901234.5678",
        "DECIMAL(18,4)",
        "as_decimal38_4",
        Decimal("-12345678901234.5678"),
    ),
    (
        Decimal("1234567890123456789012.5"),
        "1234567890123456789012.5",
        "DECIMAL(23,1)",
        "as_decimal38_4",
        Decimal("1234567890123456789012.5000"),
    ),
    (Decimal("NaN"), '"NaN"', "STRING", "as_string", "NaN"),
    ("short", '"short"', "STRING", "as_string", "short"),
    ("é" * 40, '"' + "é" * 40 + '"', "STRING", "as_string", "é" * 40),
    (b"\x00\xff", '"AP8="', "BINARY", "as_binary", bytearray(b"\x00\xff")),
    (
        uuid.UUID(int=5),
        '"00000000-0000-0000-0000-000000000005"',
        "STRING",
        "as_string",
        "00000000-0000-0000-0000-000000000005",
    ),
    (
        datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=PLUS2),
        '"2024-01-02 01:04:05.123456+00:00"',
        "TIMESTAMP",
        "as_micros",
        1704157445123456,
    ),
    (
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
        '"1969-12-31 23:59:59.999999+00:00"',
        "TIMESTAMP",
        "as_micros",
        -1,
    ),
    (
        datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
        '"2024-01-02 03:04:05.123456"',
        "TIMESTAMP_NTZ",
        "as_ntz",
        datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
    ),
    (datetime.date(1969, 12, 31), '"1969-12-31"', "DATE", "as_date", datetime.date(1969, 12, 31)),
    (datetime.time(1, 2, 3), '"01:02:03"', "STRING", "as_string", "01:02:03"),
    (datetime.timedelta(days=1, seconds=5), '"1 day, 0:00:05"', "STRING", "as_string", "1 day, 0:00:05"),
    ({"a": 7, "b": [1, "x"]}, '{"a":7,"b":[1,"x"]}', "OBJECT<a: BIGINT, b: ARRAY<VARIANT>>", "a", 7),
    (
        {1: "one", None: "n", "a": 3},
        '{"1":"one","a":3,"null":"n"}',
        "OBJECT<`1`: STRING, a: BIGINT, null: STRING>",
        "a",
        3,
    ),
    ([1, [2, [3]]], "[1,[2,[3]]]", "ARRAY<VARIANT>", "as_string", "[1,[2,[3]]]"),
    ([], "[]", "ARRAY<VOID>", "as_string", "[]"),
    ({}, "{}", "OBJECT<>", "a", None),
    ([{"a": 1}, {"a": 2, "b": None}], '[{"a":1},{"a":2,"b":null}]', "ARRAY<OBJECT<a: BIGINT, b: VOID>>", "a", None),
    (WIDE, None, None, "a", 42),
]
ABSENT_ROW = len(CASES)  # SQL NULL: the column is absent in this row

GETTERS = {
    "as_string": "try_variant_get(v, '$', 'string')",
    "as_boolean": "try_variant_get(v, '$', 'boolean')",
    "as_bigint": "try_variant_get(v, '$', 'bigint')",
    "as_double": "try_variant_get(v, '$', 'double')",
    "as_decimal38_0": "try_variant_get(v, '$', 'decimal(38,0)')",
    "as_decimal38_4": "try_variant_get(v, '$', 'decimal(38,4)')",
    "as_decimal10_2": "try_variant_get(v, '$', 'decimal(10,2)')",
    "as_binary": "try_variant_get(v, '$', 'binary')",
    "as_micros": "unix_micros(try_variant_get(v, '$', 'timestamp'))",
    "as_ntz": "try_variant_get(v, '$', 'timestamp_ntz')",
    "as_date": "try_variant_get(v, '$', 'date')",
    "a": "variant_get(v, '$.a', 'int')",
}


def _batches() -> list[pa.RecordBatch]:
    """Two batches (rows split unevenly) with our variant column and the constant helper columns."""
    objs = [case[0] for case in CASES] + [None]
    present = [True] * len(CASES) + [False]
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            variant_field("v"),
            pa.field("file", pa.string(), nullable=False),
            pa.field("pos", pa.int64(), nullable=False),
        ]
    )
    batches = []
    for start, stop in ((0, 5), (5, len(objs))):
        size = stop - start
        batches.append(
            pa.RecordBatch.from_arrays(
                [
                    pa.array(range(start, stop), pa.int32()),
                    variant_array_from_python(objs[start:stop], present[start:stop]),
                    string_column("/data/00000000000000000042.xlog", size),
                    int64_column(start * 1000, size),
                ],
                schema=schema,
            )
        )
    return batches


def _register(spark: Any, batches: list[pa.RecordBatch], name: str) -> str:
    """Register a tiny data source whose read() yields ``batches`` (sent to the worker as Arrow IPC)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    payload = sink.getvalue().to_pybytes()

    class VariantProbeReader(DataSourceReader):
        def read(self, partition: Any) -> Any:
            import pyarrow as pa_worker

            yield from pa_worker.ipc.open_stream(payload)

    class VariantProbeSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def schema(self) -> str:
            return "id int not null, v variant, file string not null, pos bigint not null"

        def reader(self, schema: Any) -> DataSourceReader:
            return VariantProbeReader()

    spark.dataSource.register(VariantProbeSource)
    return name


@pytest.fixture(scope="module")
def rows(spark: Any) -> dict[int, Any]:
    fmt = _register(spark, _batches(), "variant_probe_all_kinds")
    df = spark.read.format(fmt).load()
    from pyspark.sql.types import VariantType

    assert isinstance(df.schema["v"].dataType, VariantType)
    selected = df.selectExpr(
        "id",
        "file",
        "pos",
        "v",
        "to_json(v) AS json",
        "schema_of_variant(v) AS shape",
        *[f"{expr} AS {name}" for name, expr in GETTERS.items()],
    )
    return {row["id"]: row for row in selected.collect()}


@pytest.mark.parametrize("index", range(len(CASES)), ids=[type(case[0]).__name__ for case in CASES])
def test_spark_functions_on_each_kind(rows: dict[int, Any], index: int) -> None:
    _, json_text, shape, getter, expected = CASES[index]
    row = rows[index]
    if json_text is not None:
        assert row["json"] == json_text
    if shape is not None:
        assert row["shape"] == shape
    assert row[getter] == expected
    if getter != "a":
        assert row["a"] is None  # '$.a' of a non-object is NULL
    assert row["v"] is not None  # even a variant null is a value, not SQL NULL


def test_absent_row_is_sql_null(rows: dict[int, Any]) -> None:
    row = rows[ABSENT_ROW]
    assert row["v"] is None
    assert row["json"] is None
    assert row["a"] is None


def test_variant_null_is_not_sql_null(rows: dict[int, Any]) -> None:
    assert rows[0]["v"].toPython() is None
    assert rows[0]["json"] == "null"


def test_nan_double(rows: dict[int, Any], spark: Any) -> None:
    fmt = _register(
        spark,
        [
            pa.RecordBatch.from_arrays(
                [
                    pa.array([0], pa.int32()),
                    variant_array_from_python([math.nan]),
                    string_column("f", 1),
                    int64_column(0, 1),
                ],
                schema=_batches()[0].schema,
            )
        ],
        "variant_probe_nan",
    )
    row = spark.read.format(fmt).load().selectExpr("to_json(v) j", "variant_get(v, '$', 'double') d").first()
    assert row["j"] == '"NaN"'
    assert math.isnan(row["d"])


def test_wide_object_binary_search_finds_every_key(rows: dict[int, Any], spark: Any) -> None:
    """More than 32 fields: Spark looks fields up by binary search, which needs our sort order."""
    wide_row = CASES.index(next(case for case in CASES if case[0] is WIDE))
    paths = {key: f"variant_get(v, '$[\"{key}\"]', 'int')" for key in WIDE}
    fmt = _register(spark, _batches(), "variant_probe_wide")
    got = (
        spark.read.format(fmt)
        .load()
        .where(f"id = {wide_row}")
        .selectExpr(*[f"{expr} AS c{i}" for i, expr in enumerate(paths.values())])
        .first()
    )
    assert [got[f"c{i}"] for i in range(len(paths))] == list(WIDE.values())
    assert rows[wide_row]["v"].toPython() == WIDE


def test_constant_columns(rows: dict[int, Any]) -> None:
    for index, row in rows.items():
        assert row["file"] == "/data/00000000000000000042.xlog"
        assert row["pos"] == (0 if index < 5 else 5000)


def test_python_side_reads_the_same_values(rows: dict[int, Any]) -> None:
    """pyspark's VariantVal (collected from the JVM) decodes to the values we encoded (JSON-able kinds)."""
    checked = 0
    for index, case in enumerate(CASES):
        value = case[0]
        if (
            isinstance(value, (bool, str, bytes))
            or (isinstance(value, int) and abs(value) < 2**63)
            or (isinstance(value, (list, dict)) and "1" not in str(list(value)[:1]))
        ):
            assert rows[index]["v"].toPython() == value, index
            checked += 1
    assert checked >= 12
