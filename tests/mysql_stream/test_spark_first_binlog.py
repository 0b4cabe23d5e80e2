"""``spark.readStream.format("mysql-binlog")`` on a directory with no binlog yet waits for the first one, as the
Tarantool tailer and Spark's file source do, then reads it (issue #21)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource

pytestmark = [pytest.mark.spark]

FIXTURE = "mysql-binlog/osheroff/mysql-bin.checksum-crc32"  # a real MySQL binlog (tests/fixtures/README.md)


def poll(condition: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def test_stream_on_an_empty_directory_waits_for_the_first_binlog(spark: Any, fixtures_dir: Path,
                                                                 tmp_path: Path) -> None:
    directory = tmp_path / "binlogs"
    directory.mkdir()
    table = f"first_binlog_{int(time.time() * 1000)}"
    df = spark.readStream.format("mysql-binlog").load(str(directory))
    query = (df.select("file", "pos", "row_index").writeStream.format("memory").queryName(table)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="500 milliseconds")
             .start())
    try:
        poll(lambda: query.lastProgress is not None, 120, "a first trigger on the empty directory")
        assert query.isActive, query.exception()
        assert spark.table(table).count() == 0
        shutil.copy(fixtures_dir / FIXTURE, directory / "mysql-bin.000001")
        expected = spark_logsource.read("mysql-binlog", str(directory / "mysql-bin.000001")).num_rows
        assert expected > 0
        poll(lambda: spark.table(table).count() >= expected or not query.isActive, 180,
             "the rows of the first binlog")
        assert query.isActive, query.exception()
        got = spark.table(table).collect()
        assert len(got) == expected
        assert {r.file for r in got} == {str(directory / "mysql-bin.000001")}
    finally:
        query.stop()
