"""What the deployment tests share (``tests/deploy/``: a standalone cluster, a Spark Connect session): the data
sets read there, the rows of a Spark read and of the Arrow API put in one comparable shape, and a stream into
Parquet stopped and restarted over a WAL directory that a real Tarantool keeps writing.

Spark rows are collected (``toArrow`` cannot carry a Variant column with nulls in pyspark 4.3), timestamps are
compared as microseconds, and a Variant as its (value, metadata) bytes, on both sides.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

import spark_logsource
from tests.support.servers.tarantool import WorkloadSpec, run_workloads
from tests.support.streaming import KEY_COLUMNS, batch_reader_rows
from tests.support.tarantool_writer import start_writer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: A MariaDB binlog of 74 KB; statement-based, so its content is in the events view.
BINLOG = FIXTURES / "mysql-binlog" / "mariadb-poc" / "domain_id_0_mariadb-repl-bin.000005"
#: Eight segments of four tablets (one with a bad checksum: a corrupt-record row on both sides).
YUGABYTE_DIR = FIXTURES / "yugabyte-wal" / "wals"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Dataset:
    """One batch read: a format, a path and the options that cut it into several splits."""

    name: str
    fmt: str
    path: Path
    options: dict[str, str] = field(default_factory=dict)
    min_splits: int = 2


def small_datasets() -> list[Dataset]:
    """The binlog and the YugabyteDB directory (the xlog is made per session: :func:`make_bulk_xlog`)."""
    return [Dataset("binlog", "mysql-binlog", BINLOG, {"view": "events", "maxPartitionBytes": "16384"}, 3),
            Dataset("yugabyte", "yugabyte-wal", YUGABYTE_DIR, {"includeSuperseded": "true",
                                                               "maxPartitionBytes": "1024"}, 3)]


def make_bulk_xlog(base: Path, splits: int = 8) -> Dataset:
    """An xlog of 400,000 rows written by the real Tarantool, read in ``splits`` splits."""
    result = run_workloads((WorkloadSpec("bulk"),), base)["bulk"]
    xlog = max(result.directory.glob("*.xlog"), key=lambda p: p.stat().st_size)
    split_bytes = xlog.stat().st_size // splits + 1
    return Dataset("xlog", "tarantool-xlog", xlog, {"tupleFormat": "json", "maxPartitionBytes": str(split_bytes)},
                   splits)


def _plain(value: Any) -> Any:
    """A collected Spark value or an Arrow ``to_pylist`` value, in the one shape both compare in."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:  # pyspark gives a naive datetime in this process's local time
            value = value.astimezone(dt.UTC)
        return (value - EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(value, dict):
        if set(value) == {"value", "metadata"}:
            return ("variant", bytes(value["value"]), bytes(value["metadata"]))
        return tuple(_plain(v) for v in value.values())
    if hasattr(value, "metadata") and hasattr(value, "value") and type(value).__name__ == "VariantVal":
        return ("variant", bytes(value.value), bytes(value.metadata))
    if isinstance(value, tuple):  # a Row
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def arrow_rows(table: pa.Table) -> list[tuple]:
    """Every row of an Arrow API table, plain and sorted."""
    return _sorted([tuple(_plain(v) for v in row.values()) for row in table.to_pylist()])


def spark_rows(df: Any) -> list[tuple]:
    """Every row of a Spark DataFrame, plain and sorted."""
    return _sorted([tuple(_plain(v) for v in row) for row in df.collect()])


def read_df(spark: Any, data: Dataset) -> Any:
    reader = spark.read.format(data.fmt)
    for key, value in data.options.items():
        reader = reader.option(key, value)
    return reader.load(str(data.path))


def expected_rows(data: Dataset) -> list[tuple]:
    """The Arrow API's rows of the data set (no Spark), with the same options."""
    return arrow_rows(spark_logsource.read(data.fmt, str(data.path), **data.options))


def splits_read(df: Any) -> int:
    """How many of the read's partitions gave rows."""
    from pyspark.sql import functions as F

    return df.select(F.spark_partition_id().alias("p")).distinct().count()


@dataclass
class StreamOutcome:
    """What :func:`stream_into_parquet` saw: the Parquet rows, the batch reader's rows, and the rows written
    before the query was stopped and restarted."""

    rows: list[tuple]
    expected: list[tuple]
    before_restart: int


def _parquet_rows(spark: Any, out: Path, schema: Any) -> Any:
    """The sink's rows as Spark reads them (through the sink's log: committed batches only)."""
    return spark.read.schema(schema).parquet(str(out))


def _parquet_count(spark: Any, out: Path, schema: Any) -> int:
    return _parquet_rows(spark, out, schema).count() if (out / "_spark_metadata").exists() else 0


def _wait(condition: Any, timeout: float, what: str, query: Any) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not query.isActive:
            raise AssertionError(f"the query ended while waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} in {timeout:.0f} s")
        time.sleep(0.2)


def stream_into_parquet(spark: Any, tmp_path: Path, timeout: float = 300.0) -> StreamOutcome:
    """``readStream`` of a WAL directory that a real Tarantool writes into, into Parquet (Spark's exactly-once
    file sink); the query is stopped after its first rows and restarted on the same checkpoint while the writer
    goes on, then runs until every row of the finished directory is written."""
    # The writer holds at its first snapshot (transaction 100 of 300) until the first query has stopped, so that
    # query can never have every row before the restart, however fast or slow the machine is.
    gate = tmp_path / "gate"
    gate.mkdir()
    writer = start_writer(tmp_path / "wal", total=300, period=0.01, snapshot_every=100, snapshot_gate=gate)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def stream() -> Any:
        return (spark.readStream.format("tarantool-xlog").option("tupleFormat", "json")
                .option("maxRowsPerTrigger", "100").load(str(writer.directory)).select(*KEY_COLUMNS))

    def start() -> Any:
        return (stream().writeStream.format("parquet").option("path", str(out))
                .option("checkpointLocation", str(checkpoint)).trigger(processingTime="500 milliseconds").start())

    try:
        writer.wait_for_xlog()
        schema = stream().schema
        query = start()
        try:
            _wait(lambda: _parquet_count(spark, out, schema) > 0, timeout, "rows in the Parquet sink", query)
        finally:
            query.stop()
        before = _parquet_count(spark, out, schema)
        query = start()
        try:
            for k in (1, 2, 3):  # the writer's snapshots after transactions 100, 200 and 300 wait for these
                (gate / f"go-{k}").touch()
            writer.finish()
            expected = batch_reader_rows(writer.xlogs())
            _wait(lambda: _parquet_count(spark, out, schema) >= len(expected), timeout, "every row in the sink", query)
            assert query.exception() is None
        finally:
            query.stop()
    finally:
        if writer.running:
            writer.proc.kill()
            writer.proc.communicate()
    got = sorted(tuple(r) for r in _parquet_rows(spark, out, schema).collect())
    return StreamOutcome(got, expected, before)
