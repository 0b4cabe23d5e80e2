"""Spark-level checks of ``spark.read.format("tarantool-xlog")`` against Tarantool's own readers.

Expected DataFrames are built from the ORACLE (xlog.pairs() through :mod:`tests.support.oracle.tarantool_xlog`, and
``tarantoolctl cat``), never from our reader, on the files of the real-tarantool workloads
(``tests/servers/tarantool.py``), and compared with chispa.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

from tests.support.oracle.tarantool_xlog import dump_file, expected_row
from tests.support.servers.tarantool import WorkloadResult
from tests.support.spark import filter_pushdown

pytestmark = [pytest.mark.spark, pytest.mark.server]

KEY_COLUMNS = ("lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id")
KEY_SCHEMA = ("lsn long, replica_id int, tsn long, is_commit boolean, timestamp timestamp, type string, "
              "group_id int, space_id int, index_id int")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def oracle_rows(files: list[Path]) -> list[dict[str, Any]]:
    """Expected key columns (and the decoded tuple) of every row of ``files``, from xlog.pairs()."""
    out = []
    for path in files:
        dump = dump_file(path)
        assert dump.error is None, f"{path}: {dump.error}"
        for row in dump.rows:
            cols = expected_row(row).columns
            item = {name: cols[name] for name in KEY_COLUMNS}
            if item["timestamp"] is not None:
                item["timestamp"] = _EPOCH + datetime.timedelta(microseconds=item["timestamp"])
            item["tuple"] = cols["tuple"]
            out.append(item)
    return out


def assert_same_rows(actual: Any, expected: Any) -> None:
    """chispa's equality, row order ignored (pyspark.testing needs a pandas this machine does not have)."""
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def key_frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([tuple(r[c] for c in KEY_COLUMNS) for r in rows], KEY_SCHEMA)


@pytest.fixture
def pushdown(spark: Any, request: pytest.FixtureRequest) -> Iterator[bool]:
    """Run the test with Python data source filter pushdown on or off, restoring the session's value after."""
    with filter_pushdown(spark, request.param) as enabled:
        yield enabled


def test_whole_directory_equals_xlog_pairs(spark: Any, tarantool_workloads: dict[str, WorkloadResult]) -> None:
    result = tarantool_workloads["dml"]
    actual = spark.read.format("tarantool-xlog").load(str(result.directory)).select(*KEY_COLUMNS)
    expected = key_frame(spark, oracle_rows(result.files))
    assert expected.count() > 50
    assert_same_rows(actual, expected)


@pytest.mark.parametrize("pushdown", [False, True], indirect=True, ids=["pushdown-off", "pushdown-on"])
def test_where_space_and_lsn_gives_the_oracle_subset(spark: Any, tarantool_workloads: dict[str, WorkloadResult],
                                                     pushdown: bool) -> None:
    result = tarantool_workloads["txn"]
    rows = oracle_rows(result.files)
    lsns = sorted(r["lsn"] for r in rows if r["space_id"] == 512)
    threshold = lsns[len(lsns) // 2]
    wanted = [r for r in rows if r["space_id"] == 512 and r["lsn"] >= threshold]
    assert 0 < len(wanted) < len(rows)
    actual = (spark.read.format("tarantool-xlog").load(str(result.directory))
              .where(f"space_id = 512 AND lsn >= {threshold}").select(*KEY_COLUMNS))
    assert_same_rows(actual, key_frame(spark, wanted))


def test_variant_get_of_a_tuple_field(spark: Any, tarantool_workloads: dict[str, WorkloadResult]) -> None:
    result = tarantool_workloads["dml"]
    rows = [r for r in oracle_rows(result.files)
            if r["space_id"] == 512 and r["type"] in ("INSERT", "REPLACE") and r["tuple"] is not None]
    assert len(rows) >= 5
    expected = spark.createDataFrame([(r["lsn"], r["type"], r["tuple"][1]) for r in rows],
                                     "lsn long, type string, name string")
    actual = (spark.read.format("tarantool-xlog").load(str(result.directory))
              .where("space_id = 512 AND type IN ('INSERT', 'REPLACE')")
              .selectExpr("lsn", "type", "variant_get(tuple, '$[1]', 'string') AS name"))
    assert_same_rows(actual, expected)


def tarantoolctl_cat(files: list[Path], *args: str) -> list[tuple[int, int, str, int | None]]:
    """(lsn, replica_id, type, space_id) of every row ``tarantoolctl cat --format=json ARGS FILES`` prints."""
    proc = subprocess.run(["tarantoolctl", "cat", *map(str, files), "--format=json", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        header, body = item["HEADER"], item.get("BODY") or {}
        out.append((header.get("lsn", 0), header.get("replica_id", 0), header["type"], body.get("space_id")))
    return sorted(out, key=repr)


@pytest.mark.parametrize(
    ("options", "cat_args"),
    [
        ({"spaceId": "512"}, ["--space=512"]),
        ({"spaceId": "512", "fromLsn": "20", "toLsn": "40"}, ["--space=512", "--from=20", "--to=40"]),
        ({"replicaId": "1", "spaceId": "512,513,514"}, ["--replica=1", "--space=512", "--space=513", "--space=514"]),
        ({"fromLsn": "5", "toLsn": "30", "spaceId": "280,512"}, ["--from=5", "--to=30", "--space=280",
                                                                  "--space=512"]),
    ],
    ids=["space", "space-from-to", "replica", "from-to-system"],
)
def test_options_equal_tarantoolctl_cat(spark: Any, tarantool_workloads: dict[str, WorkloadResult],
                                        options: dict[str, str], cat_args: list[str]) -> None:
    files = tarantool_workloads["dml"].files_of(".xlog")
    expected = tarantoolctl_cat(files, *cat_args)
    assert expected, "tarantoolctl cat printed no rows: the option set selects nothing"
    reader = spark.read.format("tarantool-xlog")
    for name, value in options.items():
        reader = reader.option(name, value)
    rows = reader.load([str(p) for p in files]).select("lsn", "replica_id", "type", "space_id").collect()
    actual = sorted(((r.lsn, r.replica_id, r.type, r.space_id) for r in rows), key=repr)
    assert actual == expected


def test_types_option_equals_oracle_filter(spark: Any, tarantool_workloads: dict[str, WorkloadResult]) -> None:
    result = tarantool_workloads["sync"]
    rows = [r for r in oracle_rows(result.files) if r["type"] in ("RAFT_CONFIRM", "RAFT_ROLLBACK", "NOP")]
    assert {r["type"] for r in rows} == {"RAFT_CONFIRM", "RAFT_ROLLBACK", "NOP"}
    actual = (spark.read.format("tarantool-xlog").option("types", "raft_confirm,41,nop")
              .load(str(result.directory)).select(*KEY_COLUMNS))
    assert_same_rows(actual, key_frame(spark, rows))
