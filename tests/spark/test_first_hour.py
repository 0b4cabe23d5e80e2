"""What a new user meets in Spark in the first hour (issue #21): empty directories, corrupt rows under filters,
typed views in ``readStream``, and how our errors read once Spark has wrapped them."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.spark import filter_pushdown, spark_conf
from tests.support.waiting import STATE_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
CRC_BAD = "tarantool/test/xlog/reader/crc.bad.xlog"  # a real xlog whose block at byte 320 fails its checksum
FILE_FORMATS = ("tarantool-xlog", "mysql-binlog", "yugabyte-wal", "memcached-tap")


@contextmanager
def worker_logs(spark: Any) -> Iterator[Callable[[str], list[str]]]:
    """Spark's log of its Python workers (our data source runs there) on inside the block; the function returns
    the WARNING messages logged so far that contain a given text (a test's own tmp path keeps them apart)."""
    with spark_conf(spark, "spark.sql.pyspark.worker.logging.enabled", "true"):
        def warnings(containing: str) -> list[str]:
            rows = spark.tvf.python_worker_logs().where("level = 'WARNING'").select("msg").collect()
            return [r.msg for r in rows if containing in r.msg]

        yield warnings


def poll(condition: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# --- empty directories -------------------------------------------------------------------------------------------
def test_shipped_samples_directory_reads_zero_rows_and_says_why(spark: Any, tmp_path: Path) -> None:
    samples = tmp_path / "samples-tarantool"
    shutil.copytree(REPO / "samples/tarantool", samples)  # the repo's own samples/tarantool: sub-directories only
    with worker_logs(spark) as warnings:
        assert spark.read.format("tarantool-xlog").load(str(samples)).count() == 0
        said = poll(lambda: warnings(str(samples)), STATE_TIMEOUT, "the warning about sub-directories")
    assert "recursiveFileLookup" in said[0] and "dml" in said[0]
    recursive = spark.read.format("tarantool-xlog").option("recursiveFileLookup", "true").load(str(samples))
    assert recursive.count() > 0


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_arrow_api_reads_zero_rows_and_says_why(fmt: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import spark_logsource

    (tmp_path / "2024").mkdir()
    with caplog.at_level("WARNING"):
        assert spark_logsource.read(fmt, str(tmp_path)).num_rows == 0
    said = [r.getMessage() for r in caplog.records if str(tmp_path) in r.getMessage()]
    assert len(said) == 1, said
    if fmt != "yugabyte-wal":  # it always searches below (a tablet per folder)
        assert "recursiveFileLookup=true" in said[0] and "2024" in said[0]


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_empty_directory_reads_zero_rows_in_every_file_format(spark: Any, tmp_path: Path, fmt: str) -> None:
    empty = tmp_path / f"empty-{fmt}"
    empty.mkdir()
    only_subdirs = tmp_path / f"subdirs-{fmt}"
    (only_subdirs / "2024").mkdir(parents=True)
    with worker_logs(spark) as warnings:
        assert spark.read.format(fmt).load(str(empty)).count() == 0
        assert spark.read.format(fmt).load(str(only_subdirs)).collect() == []
        poll(lambda: warnings(str(empty)), STATE_TIMEOUT, "the warning about the empty directory")
        poll(lambda: warnings(str(only_subdirs)), STATE_TIMEOUT, "the warning about the sub-directories")


# --- corrupt rows under filters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("pushdown", [True, False])
def test_corrupt_row_dropped_by_a_filter_is_warned(spark: Any, fixtures_dir: Path, tmp_path: Path,
                                                     pushdown: bool) -> None:
    path = tmp_path / f"pushdown-{pushdown}" / "crc.bad.xlog"
    path.parent.mkdir()
    shutil.copy(fixtures_dir / CRC_BAD, path)
    with filter_pushdown(spark, pushdown), worker_logs(spark) as warnings:
        filtered = spark.read.format("tarantool-xlog").load(str(path)).where("space_id >= 0").collect()
        said = poll(lambda: [m for m in warnings(str(path)) if "corrupt" in m], STATE_TIMEOUT,
                    "a corrupt-record warning")
        # A new DataFrame: with pushdown on, pyspark 4.3 reuses the filtered scan for a later query of the same one
        everything = spark.read.format("tarantool-xlog").load(str(path)).collect()
    assert [r.offset for r in everything if r._corrupt_record] == [320]
    assert len(filtered) == len(everything) - 1, "Spark semantics: the corrupt row has a null space_id"
    assert any("1 corrupt record" in m and "byte 320" in m for m in said), said
    if pushdown:  # the filter is ours: the warning says which one dropped the row
        assert any("dropped by the filter" in m and "space_id >= 0" in m for m in said), said


def test_arrow_api_option_filters_keep_corrupt_rows(fixtures_dir: Path) -> None:
    import spark_logsource

    table = spark_logsource.read("tarantool-xlog", str(fixtures_dir / CRC_BAD), spaceId=[0, 280, 512])
    assert [r["offset"] for r in table.to_pylist() if r["_corrupt_record"]] == [320]


# --- errors as Spark shows them ----------------------------------------------------------------------------------
def python_frames(text: str) -> int:
    """Frames of this package in the Python traceback quoted by a Spark error (pyspark's own are not ours)."""
    return sum(1 for line in text.splitlines() if line.strip().startswith("File ") and "spark_logsource" in line)


def test_failfast_error_reads_as_our_one_line_message(spark: Any, fixtures_dir: Path) -> None:
    from pyspark.errors import PySparkException

    df = spark.read.format("tarantool-xlog").option("mode", "FAILFAST").load(str(fixtures_dir / CRC_BAD))
    with pytest.raises(PySparkException) as info:
        df.collect()
    text = str(info.value)
    ours = "crc.bad.xlog at byte 320: block checksum mismatch"
    assert ours in text
    # Measured: 6 frames of ours before the message (reader, format, filters, reader, mode, options); 1 now.
    assert python_frames(text) == 1, text
    lines = text.splitlines()
    assert any(ours in line for line in lines[:8]), text


def test_option_error_at_load_is_short(spark: Any, fixtures_dir: Path) -> None:
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        spark.read.format("tarantool-xlog").option("fromLsn", "-1").load(str(fixtures_dir / CRC_BAD))
    assert "option 'fromLsn'" in str(info.value)
    # Measured: 4 frames of ours (data source, format, its options, the option parser); 1 now.
    assert python_frames(str(info.value)) == 1, str(info.value)


# --- typed views that are batch only ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "sample", "options"), [
    ("mysql-binlog", "mysql/full-image.000001", {"view": "state", "table": "shop.orders", "schemaFrom": "binlog"}),
    ("tarantool-xlog", "tarantool/typed", {"view": "state", "space": "512"}),
])
def test_typed_view_stream_fails_with_one_clean_message(spark: Any, tmp_path: Path, fmt: str, sample: str,
                                                          options: dict[str, str]) -> None:
    directory = tmp_path / "logs"
    if (REPO / "samples" / sample).is_dir():
        shutil.copytree(REPO / "samples" / sample, directory)
    else:
        directory.mkdir()
        shutil.copy(REPO / "samples" / sample, directory)
    df = spark.readStream.format(fmt).options(**options).load(str(directory))
    query = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    except Exception:  # the query's failure: read from query.exception() below
        pass
    finally:
        if query.isActive:
            query.stop()
    error = query.exception()
    assert error is not None, "the stream must fail"
    text = str(error)
    assert f"view={options['view']}" in text and "batch" in text
    assert "UnboundLocalError" not in text and "During handling" not in text
    assert python_frames(text) == 1, text
