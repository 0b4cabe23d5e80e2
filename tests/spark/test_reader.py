"""The Spark layer itself: registration, filter pushdown on and off, option errors, partitioning."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap

import pytest

import spark_logsource
from spark_logsource.spark.base import LogReader, PushdownLogReader
from tests.support.spark import filter_pushdown as pushdown
from tests.support.spark import spark_conf

FIXTURES = "tarantool/test"


def session_time_zone(spark, zone: str):
    return spark_conf(spark, "spark.sql.session.timeZone", zone)


def test_spark_finds_our_modules_like_its_auto_registration_does() -> None:
    # Spark's lookup_data_sources worker: every top-level module named pyspark_* exporting DefaultSource.
    found = {m.name for m in pkgutil.iter_modules() if m.name.startswith("pyspark_")}
    assert {"pyspark_tarantool_xlog", "pyspark_mysql_binlog"} <= found
    import pyspark_mysql_binlog
    import pyspark_tarantool_xlog

    assert pyspark_tarantool_xlog.DefaultSource.name() == "tarantool-xlog"
    assert pyspark_mysql_binlog.DefaultSource.name() == "mysql-binlog"


def test_format_works_without_register_in_a_fresh_spark(fixtures_dir) -> None:
    path = fixtures_dir / FIXTURES / "xlog/reader/v13"
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        print("ROWS", spark.read.format("tarantool-xlog").load({str(path)!r}).count())
        spark.stop()
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    import spark_logsource

    assert f"ROWS {spark_logsource.read('tarantool-xlog', str(path)).num_rows}" in out.stdout


QUERIES = [
    "space_id = 280",
    "space_id IN (280, 288) AND lsn >= 10",
    "lsn > 5 AND lsn <= 40 AND type = 'INSERT'",
    "replica_id = 1 AND tsn < 30",
    "type <=> 'INSERT' AND index_id = 0 AND file_type = 'SNAP' AND is_commit",
    "timestamp >= timestamp'2016-01-01 00:00:00' AND timestamp < timestamp'2030-01-01 00:00:00'",
    "type LIKE 'INS%' AND replica_id IS NOT NULL",
]


@pytest.mark.parametrize("query", QUERIES)
def test_pushdown_on_and_off_give_the_same_rows(spark, fixtures_dir, query) -> None:
    path = str(fixtures_dir / FIXTURES / "xlog/reader/v13")
    results = {}
    with session_time_zone(spark, "America/New_York"):
        for enabled in (False, True):
            with pushdown(spark, enabled):
                df = spark.read.format("tarantool-xlog").load(path).where(query)
                rows = df.select("file", "offset", "lsn").collect()
                results[enabled] = sorted((r.file, r.offset, r.lsn) for r in rows)
    assert results[True] == results[False]
    assert results[True], f"the fixture has rows for {query!r}"


def test_the_right_reader_class_is_chosen(spark, fixtures_dir) -> None:
    """With the conf on, filters Spark pushed are ours to apply: Spark's plan keeps no Filter over the scan."""
    path = str(fixtures_dir / FIXTURES / "xlog/reader/v13")
    with pushdown(spark, True):
        plan = spark.read.format("tarantool-xlog").load(path).where("space_id = 280")._jdf.queryExecution()
        executed = plan.executedPlan().toString()
    assert "Filter (" not in executed and "Filter [" not in executed and "+- Filter" not in executed
    with pushdown(spark, False):
        executed = spark.read.format("tarantool-xlog").load(path).where("space_id = 280")._jdf.queryExecution() \
            .executedPlan().toString()
    assert "Filter" in executed.replace("RuntimeFilters", "")
    assert "pushFilters" not in LogReader.__dict__ and "pushFilters" in PushdownLogReader.__dict__


def test_bad_option_fails_at_load_naming_it(spark, fixtures_dir) -> None:
    path = str(fixtures_dir / FIXTURES / "xlog/reader/v13")
    with pytest.raises(Exception, match="tupleFormat"):
        spark.read.format("tarantool-xlog").option("tupleFormat", "xml").load(path).schema  # noqa: B018
    with pytest.raises(Exception, match=r"(?i)'spaceidd': unknown option.*did you mean 'spaceId'"):
        spark.read.format("tarantool-xlog").option("spaceIdd", "1").load(path).schema  # noqa: B018


def test_small_partitions_read_the_same_rows(spark, fixtures_dir) -> None:
    path = str(fixtures_dir / FIXTURES / "box-luatest/upgrade/2.11.0/vshard")
    whole = spark.read.format("tarantool-xlog").option("recursiveFileLookup", "true").load(path)
    split = spark.read.format("tarantool-xlog").options(recursiveFileLookup="true", maxPartitionBytes="1k").load(path)
    assert split.rdd.getNumPartitions() > whole.rdd.getNumPartitions()
    key = ["file", "offset", "lsn", "type", "space_id"]
    a = sorted(tuple(r) for r in whole.select(*key).collect())
    b = sorted(tuple(r) for r in split.select(*key).collect())
    assert a == b and len(a) > 100


CRC_BAD = "tarantool/test/xlog/reader/crc.bad.xlog"


def test_permissive_corrupt_rows_reach_spark_with_file_and_offset(spark, fixtures_dir) -> None:
    """Through Spark: one corrupt-record row per bad block, every good row kept (same as the Arrow API)."""
    path = str(fixtures_dir / CRC_BAD)
    df = spark.read.format("tarantool-xlog").load(path)
    bad = df.where("_corrupt_record IS NOT NULL").select("file", "offset", "lsn", "_corrupt_record").collect()
    table = spark_logsource.read("tarantool-xlog", path)
    corrupt = [(o, m) for o, m in zip(table.column("offset").to_pylist(), table.column("_corrupt_record").to_pylist(),
                                      strict=True) if m is not None]
    assert [(r.offset, r._corrupt_record) for r in bad] == corrupt and corrupt
    assert all(r.file == path and r.lsn is None and f"at byte {r.offset}" in r._corrupt_record for r in bad)
    assert df.where("_corrupt_record IS NULL").count() == table.num_rows - len(corrupt) > 0
    dropped = spark.read.format("tarantool-xlog").option("mode", "DROPMALFORMED").load(path)
    assert "_corrupt_record" not in dropped.columns
    assert dropped.count() == table.num_rows - len(corrupt)


def test_failfast_error_reaches_the_user_with_file_and_offset(spark, fixtures_dir) -> None:
    path = str(fixtures_dir / CRC_BAD)
    table = spark_logsource.read("tarantool-xlog", path)
    first_bad = next(o for o, m in zip(table.column("offset").to_pylist(),
                                       table.column("_corrupt_record").to_pylist(), strict=True) if m is not None)
    with pytest.raises(Exception, match=rf"ChecksumError: {path} at byte {first_bad}: "):
        spark.read.format("tarantool-xlog").option("mode", "FAILFAST").load(path).collect()
