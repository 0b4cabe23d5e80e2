"""The columnar JVM reader (``jars/arrow-pipe``, ``read_columnar``): the same rows as our Python data sources,
Spark's filters and projections applied exactly, our errors with their file and offset, and a worker that breaks
the protocol never taken for a whole split."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import spark_logsource
from spark_logsource.errors import OptionError
from spark_logsource.spark.columnar import arrow_pipe_jar, read_columnar
from tests.support.spark import filter_pushdown

XLOG = "tarantool/test/xlog/reader/v13"
SAKILA = "mysql-binlog/osheroff/mysql-bin.sakila.gz"
YUGABYTE = "yugabyte-wal/wals"
DAMAGED = "tarantool/test/xlog/reader/crc.bad.xlog"  # Tarantool's own test file: a row whose CRC does not match


@pytest.fixture(scope="module", autouse=True)
def built_jar() -> None:
    if arrow_pipe_jar() is None:
        if shutil.which("javac") is None:
            pytest.skip("no JDK here: jars/arrow-pipe.jar cannot be built")
        pytest.fail("jars/arrow-pipe.jar is not built: scripts/setup.sh builds it (jars/arrow-pipe/build.sh)")


def as_text(df):  # type: ignore[no-untyped-def]
    """Every column cast to a string: Variant columns cannot take part in a set operation."""
    from pyspark.sql import functions as F

    return df.select([F.col(c).cast("string").alias(c) for c in df.columns])


def assert_same_rows(ours, theirs) -> None:  # type: ignore[no-untyped-def]
    assert ours.schema == theirs.schema
    a, b = as_text(ours), as_text(theirs)
    assert ours.count() == theirs.count() > 0
    assert a.exceptAll(b).count() == 0
    assert b.exceptAll(a).count() == 0


CASES = [
    ("tarantool-xlog", XLOG, {}),
    ("tarantool-xlog", XLOG, {"tupleFormat": "msgpack"}),
    ("mysql-binlog", SAKILA, {}),
    ("mysql-binlog", SAKILA, {"view": "table", "table": "sakila.payment"}),
    ("yugabyte-wal", YUGABYTE, {}),
]


@pytest.mark.parametrize("transport", ["ring", "stream"])  # shared memory, and the pipe
@pytest.mark.parametrize(("fmt", "where", "options"), CASES, ids=lambda c: str(c).replace("/", "_"))
def test_same_rows_as_the_python_data_source(spark, fixtures_dir: Path, fmt, where, options, transport) -> None:
    path = str(fixtures_dir / where)
    # small splits: several tasks per file, so every split boundary is crossed
    opts = {**options, "maxPartitionBytes": "65536"}
    rings = spark.sparkContext._jvm.io.sparklogsource.arrowpipe.RingBatches  # local mode: the executor is this JVM
    before = rings.accepted()
    ours = read_columnar(spark, fmt, path, transport=transport, **opts)
    assert_same_rows(ours, spark.read.format(fmt).options(**opts).load(path))
    assert (rings.accepted() > before) == (transport == "ring")  # the tasks took the transport asked for


def test_several_splits_give_several_tasks_and_the_same_rows(spark, fixtures_dir: Path, tmp_path: Path) -> None:
    # uncompressed, so that the binlog has several splits (a .gz file is one)
    binlog = tmp_path / "mysql-bin.000001"
    binlog.write_bytes(gzip.decompress((fixtures_dir / SAKILA).read_bytes()))
    path = str(binlog)
    df = read_columnar(spark, "mysql-binlog", path, view="table", table="sakila.payment", maxPartitionBytes="1000000")
    assert df.rdd.getNumPartitions() > 1
    expected = spark_logsource.read("mysql-binlog", path, view="table", table="sakila.payment")
    assert df.count() == expected.num_rows
    ids = sorted(r.payment_id for r in df.select("after.payment_id").collect())
    assert ids == sorted(expected.column("after").combine_chunks().field("payment_id").to_pylist())


@pytest.mark.parametrize("pushdown", [False, True])
def test_filters_and_projections_are_spark_s_and_exact(spark, fixtures_dir: Path, pushdown: bool) -> None:
    path = str(fixtures_dir / SAKILA)
    query = "after.amount > 5.00 AND op = 'c'"
    with filter_pushdown(spark, pushdown):
        ours = read_columnar(spark, "mysql-binlog", path, view="table", table="sakila.payment")
        theirs = spark.read.format("mysql-binlog").option("view", "table").option("table", "sakila.payment").load(path)
        got = sorted(tuple(r) for r in ours.where(query).select("after.payment_id", "after.amount").collect())
        want = sorted(tuple(r) for r in theirs.where(query).select("after.payment_id", "after.amount").collect())
    assert got == want and len(got) > 100


def test_count_needs_no_column_and_still_counts_every_row(spark, fixtures_dir: Path) -> None:
    path = str(fixtures_dir / SAKILA)
    df = read_columnar(spark, "mysql-binlog", path)
    assert df.count() == spark_logsource.read("mysql-binlog", path).num_rows
    assert df.select("pos").count() == df.count()


def test_a_limit_ends_its_tasks_early_and_the_next_query_is_whole(spark, fixtures_dir: Path) -> None:
    path = str(fixtures_dir / SAKILA)
    df = read_columnar(spark, "mysql-binlog", path, batchSize="100")
    assert len(df.limit(5).collect()) == 5
    assert df.count() == spark_logsource.read("mysql-binlog", path).num_rows


def test_workers_are_reused_by_later_tasks(spark, fixtures_dir: Path) -> None:
    path = str(fixtures_dir / XLOG)
    df = read_columnar(spark, "tarantool-xlog", path)
    assert df.rdd.getNumPartitions() == 2
    df.count()
    pool = spark.sparkContext._jvm.io.sparklogsource.arrowpipe.WorkerPool  # local mode: the executor is this JVM
    started, idle = pool.started(), pool.idle()
    for _ in range(3):
        assert df.count() == spark_logsource.read("tarantool-xlog", path).num_rows
    # Six tasks, two at a time at most (local[2]): served by the idle workers, plus at most the ones two concurrent
    # tasks need beyond them (the first query's tasks may have run one after the other, leaving one worker idle).
    assert pool.started() - started <= max(0, 2 - idle)
    assert pool.idle() >= min(2, idle)


def test_idle_workers_are_ended_and_replaced(spark, fixtures_dir: Path) -> None:
    path = str(fixtures_dir / XLOG)
    df = read_columnar(spark, "tarantool-xlog", path)
    df.count()
    pool = spark.sparkContext._jvm.io.sparklogsource.arrowpipe.WorkerPool
    assert pool.idle() >= 1
    # what the pool's reaper does every 10 s to workers idle for a minute, asked for at once
    assert (pool.IDLE_TIMEOUT_NANOS, pool.REAP_EVERY_SECONDS) == (60_000_000_000, 10)
    assert pool.reap(0) >= 1 and pool.idle() == 0
    started = pool.started()
    assert df.count() == spark_logsource.read("tarantool-xlog", path).num_rows
    assert pool.started() > started and pool.idle() >= 1  # new workers, back in the pool after the query


def test_a_damaged_file_names_the_file_and_the_offset(spark, fixtures_dir: Path) -> None:
    damaged = str(fixtures_dir / DAMAGED)
    with pytest.raises(Exception) as caught:
        read_columnar(spark, "tarantool-xlog", damaged, mode="FAILFAST").collect()
    with pytest.raises(spark_logsource.errors.CorruptDataError) as ours:
        spark_logsource.read("tarantool-xlog", damaged, mode="FAILFAST")
    assert str(ours.value) in str(caught.value)  # the decoder's own message: file and offset
    assert damaged in str(ours.value)


def test_permissive_gives_the_corrupt_row(spark, fixtures_dir: Path) -> None:
    damaged = str(fixtures_dir / DAMAGED)
    opts = {"mode": "PERMISSIVE"}
    ours = read_columnar(spark, "tarantool-xlog", damaged, **opts)
    assert_same_rows(ours, spark.read.format("tarantool-xlog").options(**opts).load(damaged))
    assert ours.where("_corrupt_record IS NOT NULL").count() >= 1


@pytest.mark.parametrize(("mode", "said"), [
    ("lie", "the worker said 'ok "),  # a status claiming a row more than the stream held
    ("die", "it ended without a status line"),  # a stream cut short by the worker's death
    ("silent", "its stream broke"),  # an exit before any stream
])
def test_a_worker_that_breaks_the_protocol_fails_the_task(spark, fixtures_dir: Path, mode: str, said: str) -> None:
    path = str(fixtures_dir / SAKILA)
    df = read_columnar(spark, "mysql-binlog", path, worker_module=f"tests.support.lying_pipe.{mode}")
    with pytest.raises(Exception) as caught:
        df.count()
    assert said in str(caught.value)


@pytest.mark.parametrize(("mode", "transport", "said"), [
    # string offsets past the data: the values are read from the buffers' addresses, so the bounds are checked first
    ("stray", "stream", "malformed batch after 0 rows: column file: its offsets go back or past its data"),
    ("overrun", "ring", "its stream broke: the worker's file 0 holds "),  # a batch said to lie beyond its file
    # a null claimed without a validity bitmap: Arrow's loader alone would turn every row of the column null
    ("nullslie", "ring", "its stream broke: file: buffer 0 holds 0 bytes of the "),
    ("nullslie", "stream", "its stream broke: file: buffer 0 holds 0 bytes of the "),
    # a length prefix Arrow would allocate before reading: 0.9 GB
    ("hugemeta", "stream", "its stream broke: the worker's message claims 900000000 bytes of metadata"),
])
def test_a_malformed_batch_fails_the_task_not_the_jvm(spark, fixtures_dir: Path, mode, transport, said) -> None:
    path = str(fixtures_dir / SAKILA)
    df = read_columnar(spark, "mysql-binlog", path, worker_module=f"tests.support.lying_pipe.{mode}",
                       transport=transport)
    with pytest.raises(Exception) as caught:
        df.select("file").collect()
    assert said in str(caught.value)
    assert read_columnar(spark, "mysql-binlog", path).select("file").distinct().count() == 1  # the JVM lives on


def test_a_ring_the_jvm_cannot_map_falls_back_to_the_pipe(spark, fixtures_dir: Path) -> None:
    # the worker offers its stdin and stderr as the ring's files: the JVM refuses them, and the rows come as a stream
    path = str(fixtures_dir / SAKILA)
    df = read_columnar(spark, "mysql-binlog", path, worker_module="tests.support.lying_pipe.fakering")
    assert df.select("file", "pos").count() == spark_logsource.read("mysql-binlog", path).num_rows


def test_a_worker_module_the_application_did_not_allow_is_refused(spark, fixtures_dir: Path) -> None:
    # the module is checked against a setting fixed at the application's start, out of reach of SQL's SET
    with pytest.raises(Exception, match="not listed in spark.logsource.arrowPipe.extraModules"):
        read_columnar(spark, "mysql-binlog", str(fixtures_dir / SAKILA), worker_module="http.server").count()


def test_formats_with_credentials_are_refused(spark, fixtures_dir: Path) -> None:
    with pytest.raises(OptionError, match="read_columnar reads log files"):
        read_columnar(spark, "mysql-replication", "mysql://cdc@127.0.0.1:1", password="secret")
    # a file format holding a server's password (schemaFrom), refused before it connects anywhere
    with pytest.raises(OptionError, match="does not carry credentials"):
        read_columnar(spark, "mysql-binlog", str(fixtures_dir / SAKILA), view="table", table="sakila.payment",
                      schemaFrom="mysql://cdc@127.0.0.1:1", password="secret")
    with pytest.raises(OptionError, match="does not carry credentials"):
        read_columnar(spark, "mysql-binlog", str(fixtures_dir / SAKILA), view="table", table="sakila.payment",
                      schemaFrom="mysql://cdc:secret@127.0.0.1:1")


@pytest.mark.parametrize("path", ["s3://key:secret@bucket/binlogs/",
                                  "abfs://c@acct.dfs.core.windows.net/binlogs?tenant_id=t&client_secret=s"])
def test_paths_with_credentials_are_refused(spark, path: str) -> None:
    with pytest.raises(OptionError, match="credentials"):
        read_columnar(spark, "mysql-binlog", path)


def test_a_glob_question_mark_is_no_query_but_secrets_in_queries_and_web_user_names_are_refused() -> None:
    from spark_logsource.spark.columnar import refuse_secret_in_path

    for path in ("s3://b/t/dt=2024-01-0?/shard_key=3/*.binlog", "s3://b/binlog.00000?", "/var/lib/mysql/bin.0?",
                 "abfs://container@account.dfs.core.windows.net/binlogs/"):
        refuse_secret_in_path(path)  # accepted
    for path in ("abfs://c@account/binlogs?client_secret=s", "https://host/binlogs?sig=abc",
                 "https://token@host/binlogs", "s3://key:secret@bucket/binlogs/"):
        with pytest.raises(OptionError, match="credentials"):
            refuse_secret_in_path(path)
