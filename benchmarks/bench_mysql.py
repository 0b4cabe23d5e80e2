"""Benchmark: reading a MariaDB binlog of ≥ 500 000 row changes (issue #3, "Speed").

Makes the binlog on a real MariaDB 10.11 (``binlog_format=ROW``, ``binlog_row_metadata=FULL``; one table of 8
columns: INT, BIGINT, SMALLINT, VARCHAR, DECIMAL, DATETIME, TEXT, TINYINT; multi-row inserts in transactions,
then updates and deletes), keeps it with the server's datadir under ``--workdir`` (reused by later runs: the
same server streams the same file), then times in one run:

* ``spark_logsource.iter_batches("mysql-binlog", file)`` in this process, default options and ``rowFormat=json``;
* a Spark ``local[2]`` read of the file to the ``noop`` sink (session start-up not counted), with the splits
  Spark plans by default (one per 128 MiB) and as one split, its CPU being the JVM's, its Python workers' and
  this process's;
* the file's default splits read one after another in this process (what Spark's tasks do in total), against
  one split: what splitting costs in CPU;
* ``mariadb-binlog -v --base64-output=decode-rows FILE > /dev/null`` (the server's own reader, C++);
* python-mysql-replication (``pymysqlreplication.BinLogStreamReader``) streaming the same file from the same
  server over loopback TCP (``blocking=False``, only rows events, counting rows);

and prints a markdown table of rows/s, CPU seconds per million rows and the ratios to mariadb-binlog, then the
peak RSS of ``iter_batches`` over the file and over a ``--big-factor`` times larger one (made by the same
server). ``--profile`` adds a cProfile of ``iter_batches``. ``--decoding-free`` also times the Spark read with our
decoding taken out (the same batches, decoded beforehand, served from a memory-mapped Arrow file): Spark's own
cost, the best any Python data source can do here.

``--shape wide`` / ``--shape narrow`` make instead an insert-only binlog of a table of 50 columns (the id, 40
``VARCHAR(64)`` texts ``'text k of row i'``, 9 MariaDB ``JSON`` documents ``{"id": i, "tag": "tag k", "vals": [k,
i, 3], "ok": true}``; 100 rows per INSERT) or of 2 integer columns (``id INT``, ``v BIGINT``; 1000 rows per INSERT).
``--shape bulk`` makes a binlog of one huge transaction and one huge UPDATE: ``--rows`` rows of a table of 5
columns (``id INT`` primary key, ``DATETIME(6)``, ``DECIMAL(14,4)`` with some NULLs, ``VARCHAR(64)``, ``INT``)
inserted by one ``INSERT ... SELECT`` from the server's sequence table, then every fifth row updated by one
``UPDATE ... WHERE id % 5 = 0`` (each change with its before and after image).

    python3 benchmarks/bench_mysql.py [--workdir /tmp/spark-logsource-bench] [--rows 500000] [--profile]
        [--shape base|wide|narrow|bulk] [--splits N] [--big-factor 10] [--no-pmr] [--no-spark] [--no-rss]
        [--decoding-free]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_spark import cpu_seconds as _cpu_seconds  # the benchmarks/ folder is sys.path[0]
from local_spark import jvm_pid, process_tree_cpu, register_prebuilt
from mariadb_server import REPO, open_server, tcp_settings
from peak_rss import peak_rss_kib

from tests.support.servers.mariadb import MariaDBServer

log = logging.getLogger("bench_mysql")

WORKLOAD_VERSION = 1
DEFAULT_INSERT_ROWS_PER_STATEMENT = 1000
TABLE = "bench.orders"


def shape_table(shape: str) -> str:
    """The workload's table, whose typed columns ``view=table`` reads."""
    return TABLE if shape == "base" else f"bench.{shape}"

TABLE_DDL = f"""CREATE TABLE {TABLE} (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    customer_id BIGINT NOT NULL,
    qty SMALLINT NOT NULL,
    sku VARCHAR(40) NOT NULL,
    price DECIMAL(12,2),
    created DATETIME,
    note TEXT,
    status TINYINT UNSIGNED)"""


@dataclass
class Workload:
    """What the cached binlog holds (from the server's affected-row counts)."""

    binlog: str
    inserts: int
    updates: int
    deletes: int
    per_statement: int = DEFAULT_INSERT_ROWS_PER_STATEMENT

    @property
    def rows(self) -> int:
        return self.inserts + self.updates + self.deletes


def _insert_values(first: int, count: int) -> str:
    return ", ".join(
        f"({n % 5003}, {n % 97 + 1}, 'SKU-{n:08d}', {(n % 100000) / 100 - 300:.2f},"
        f" '2024-{1 + n % 12:02d}-{1 + n % 28:02d} {n % 24:02d}:{n % 60:02d}:{n % 59:02d}',"
        f" {'NULL' if n % 7 == 0 else repr(f'order note {n} ' + 'x' * (n % 40))}, {n % 256})"
        for n in range(first, first + count))


WIDE_TEXTS, WIDE_JSONS = 40, 9
SHAPES: dict[str, tuple[str, int]] = {  # shape -> (DDL, rows per INSERT)
    "wide": ("CREATE TABLE bench.wide (id INT NOT NULL PRIMARY KEY, "
             + ", ".join(f"t{k} VARCHAR(64)" for k in range(WIDE_TEXTS)) + ", "
             + ", ".join(f"j{k} JSON" for k in range(WIDE_JSONS)) + ")", 100),
    "narrow": ("CREATE TABLE bench.narrow (id INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL)", 1000),
}


def _shape_values(shape: str, first: int, count: int) -> str:
    if shape == "narrow":
        return ", ".join(f"({n}, {n * 7})" for n in range(first, first + count))
    return ", ".join(
        "(" + ", ".join([str(n), *(f"'text {k} of row {n}'" for k in range(WIDE_TEXTS)),
                         *(f"'{{\"id\": {n}, \"tag\": \"tag {k}\", \"vals\": [{k}, {n}, 3], \"ok\": true}}'"
                           for k in range(WIDE_JSONS))]) + ")"
        for n in range(first, first + count))


#: The server's settings while a workload writes: full row images and metadata, CRC32, one file however large.
WORKLOAD_SETTINGS = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "binlog_checksum": "CRC32",
                     "log_bin_compress": "OFF", "max_binlog_size": 1 << 30}


def _one_binlog(server: MariaDBServer, workload: Callable[[MariaDBServer], None]) -> str:
    """Run ``workload`` with :data:`WORKLOAD_SETTINGS` into a fresh binlog: the name of the one file it wrote."""
    files = server.run_workload(workload, WORKLOAD_SETTINGS)
    if len(files) != 1:
        raise RuntimeError(f"the workload wrote {len(files)} binlog files, expected 1: {files}")
    return str(files[0].name)


def make_shape_workload(server: MariaDBServer, shape: str, rows: int) -> Workload:
    """An insert-only binlog of ``rows`` rows of the ``wide`` or ``narrow`` table (transactions of ~10 000 rows)."""
    ddl, per_statement = SHAPES[shape]
    statements = -(-rows // per_statement)
    per_transaction = max(1, 10_000 // per_statement)
    counts = {"inserts": 0, "updates": 0, "deletes": 0}

    def workload(srv: MariaDBServer) -> None:
        srv.execute("DROP DATABASE IF EXISTS bench")
        srv.execute("CREATE DATABASE bench CHARACTER SET utf8mb4")
        srv.execute(ddl)
        for s in range(statements):
            if s % per_transaction == 0:
                srv.execute("BEGIN")
            counts["inserts"] += srv.execute(f"INSERT INTO bench.{shape} VALUES "
                                             + _shape_values(shape, s * per_statement, per_statement))
            if s % per_transaction == per_transaction - 1 or s == statements - 1:
                srv.execute("COMMIT")

    return Workload(_one_binlog(server, workload), per_statement=per_statement, **counts)


BULK_DDL = ("CREATE TABLE bench.bulk (id INT NOT NULL PRIMARY KEY, created DATETIME(6) NOT NULL, "
            "amount DECIMAL(14,4), name VARCHAR(64) NOT NULL, qty INT NOT NULL)")
#: The bulk table's rows, made by the server from its sequence table: one INSERT ... SELECT, one transaction.
BULK_SELECT = ("SELECT seq, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL seq % 1000000 MICROSECOND, "
               "IF(seq % 11 = 0, NULL, (seq % 100000) / 7 - 5000), CONCAT('customer name ', seq), seq % 1000 "
               "FROM bench.seq_1_to_{rows}")


def make_bulk_workload(server: MariaDBServer, rows: int) -> Workload:
    """The bulk binlog: ``rows`` rows inserted by one ``INSERT ... SELECT`` (one transaction, huge rows events), then
    one ``UPDATE`` of every fifth row (before and after images)."""
    counts = {"inserts": 0, "updates": 0, "deletes": 0}

    def workload(srv: MariaDBServer) -> None:
        srv.execute("DROP DATABASE IF EXISTS bench")
        srv.execute("CREATE DATABASE bench CHARACTER SET utf8mb4")
        srv.execute(BULK_DDL)
        srv.execute("BEGIN")
        counts["inserts"] += srv.execute("INSERT INTO bench.bulk " + BULK_SELECT.format(rows=rows))
        srv.execute("COMMIT")
        srv.execute("BEGIN")
        counts["updates"] += srv.execute(
            "UPDATE bench.bulk SET created = created + INTERVAL 1 DAY, amount = amount * 2, "
            "name = CONCAT(name, ' (updated)'), qty = qty + 1 WHERE id % 5 = 0")
        srv.execute("COMMIT")

    return Workload(_one_binlog(server, workload), per_statement=rows, **counts)


def make_workload(server: MariaDBServer, rows: int, per_statement: int) -> Workload:
    """Write ≥ ``rows`` row changes into one fresh binlog file: ~73% inserts (``per_statement`` rows per INSERT,
    transactions of about 10 000 inserted rows), ~18% updates, ~9% deletes."""
    statements_per_transaction = max(1, 10_000 // per_statement)
    insert_rows = -(-int(rows * 0.73) // per_statement) * per_statement
    counts = {"inserts": 0, "updates": 0, "deletes": 0}

    def workload(srv: MariaDBServer) -> None:
        srv.execute("DROP DATABASE IF EXISTS bench")
        srv.execute("CREATE DATABASE bench CHARACTER SET utf8mb4")
        srv.execute(TABLE_DDL)
        statements = insert_rows // per_statement
        for s in range(statements):
            if s % statements_per_transaction == 0:
                srv.execute("BEGIN")
            counts["inserts"] += srv.execute(
                f"INSERT INTO {TABLE} (customer_id, qty, sku, price, created, note, status) VALUES "
                + _insert_values(s * per_statement, per_statement))
            if s % statements_per_transaction == statements_per_transaction - 1 or s == statements - 1:
                srv.execute("COMMIT")
        # Updates of 10 000 rows per statement, then deletes, until the total is reached.
        step = 10_000
        lo = 1
        while sum(counts.values()) < rows * 0.91:
            counts["updates"] += srv.execute(
                f"UPDATE {TABLE} SET qty = qty + 1, price = price * 1.1, note = CONCAT('updated ', sku) "
                f"WHERE id >= {lo} AND id < {lo + step}")
            lo += step
        hi = insert_rows + 1
        while sum(counts.values()) < rows:
            counts["deletes"] += srv.execute(f"DELETE FROM {TABLE} WHERE id >= {hi - step} AND id < {hi}")
            hi -= step

    return Workload(_one_binlog(server, workload), per_statement=per_statement, **counts)


def prepare(workdir: Path, rows: int, per_statement: int, shape: str = "base") -> tuple[MariaDBServer, Workload]:
    """Start the kept server of ``workdir`` (making it and the binlog on first use) and return the workload."""
    marker = workdir / "workload.json"
    cached: dict | None = None
    if marker.exists():
        cached = json.loads(marker.read_text())
        if (cached.get("version") != WORKLOAD_VERSION or cached.get("requested_rows") != rows
                or cached.get("per_statement", DEFAULT_INSERT_ROWS_PER_STATEMENT) != per_statement):
            log.info("cached workload does not match (%s): making a new one", cached)
            cached = None
    if cached is None and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    server = open_server(workdir / "server")
    if cached is not None:
        workload = Workload(cached["binlog"], cached["inserts"], cached["updates"], cached["deletes"], per_statement)
        log.info("using the cached binlog %s (%d row changes)", workload.binlog, workload.rows)
        return server, workload
    started = time.perf_counter()
    if shape == "base":
        workload = make_workload(server, rows, per_statement)
    elif shape == "bulk":
        workload = make_bulk_workload(server, rows)
    else:
        workload = make_shape_workload(server, shape, rows)
    log.info("made %s with %d row changes in %.1f s", workload.binlog, workload.rows, time.perf_counter() - started)
    marker.write_text(json.dumps({"version": WORKLOAD_VERSION, "requested_rows": rows, "binlog": workload.binlog,
                                  "per_statement": per_statement, "inserts": workload.inserts,
                                  "updates": workload.updates, "deletes": workload.deletes}))
    return server, workload


# -- the readers ----------------------------------------------------------------------------------------------
def count_iter_batches(path: Path, **options: str) -> int:
    import spark_logsource

    return sum(batch.num_rows for batch in spark_logsource.iter_batches("mysql-binlog", str(path), **options))


def run_mariadb_binlog(path: Path) -> int:
    with open(os.devnull, "wb") as devnull:
        subprocess.run(["mariadb-binlog", "-v", "--base64-output=decode-rows", str(path)], stdout=devnull,
                       check=True)
    return -1  # rows are not counted (output goes to /dev/null); the workload's count is used


def count_python_mysql_replication(server: MariaDBServer, binlog: str) -> int:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    # is_mariadb=True would send COM_BINLOG_DUMP with an empty file name (the server's FIRST binlog); the plain
    # COM_BINLOG_DUMP names our file and MariaDB serves it the same way (its events are parsed either way).
    stream = BinLogStreamReader(connection_settings=tcp_settings(server), server_id=4242, blocking=False,
                                is_mariadb=False, log_file=binlog, log_pos=4, resume_stream=True,
                                enable_logging=False,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    rows = 0
    try:
        for event in stream:
            if stream.log_file != binlog:
                break
            rows += len(event.rows)
    finally:
        stream.close()
    return rows


def spark_noop(path: Path, **options: str) -> Callable[[], int]:
    """Start a local[2] session now (not timed); return the timed action: read ``path`` to the noop sink."""
    from pyspark.sql import SparkSession

    import spark_logsource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("bench_mysql").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_logsource.register(spark)
    spark.range(1).write.format("noop").mode("overwrite").save()  # warm the JVM side

    def run() -> int:
        spark.read.format("mysql-binlog").options(**options).load(str(path)).write.format("noop") \
            .mode("overwrite").save()
        return -1

    return run


def spark_noop_decoding_free(path: Path, parts: int, cache_dir: Path) -> Callable[[], int]:
    """The same Spark read with the decoding taken out: what any Python data source can reach on this machine.

    A data source of this benchmark yields the very batches ``mysql-binlog`` makes for ``path`` (same schema, same
    rows), decoded beforehand into an Arrow IPC file in ``cache_dir`` (the workload's folder) that each of
    ``parts`` tasks memory-maps and yields a share of (``local_spark.register_prebuilt``): the Python workers only
    hand batches over, so what is left is Spark's own cost (the Arrow stream to the JVM, the conversion into rows)
    and ours is zero."""
    import pyarrow as pa
    from pyspark.sql import SparkSession

    import spark_logsource

    arrow_path = cache_dir / f"{path.name}.batches.arrow"
    if not arrow_path.exists():
        batches = spark_logsource.iter_batches("mysql-binlog", [str(path)])
        first = next(batches)
        with pa.ipc.new_file(str(arrow_path), first.schema) as writer:
            writer.write_batch(first)
            for batch in batches:
                writer.write_batch(batch)
    spark = SparkSession.getActiveSession()
    assert spark is not None, "spark_noop() starts the session first"
    register_prebuilt(spark, parts)

    def run() -> int:
        spark.read.format("bench-prebuilt").option("path", str(arrow_path)).load().write.format("noop") \
            .mode("overwrite").save()
        return -1

    return run


def spark_noop_parquet(path: Path, parts: int, cache_dir: Path) -> Callable[[], int]:
    """Spark's own reader over the same rows: the batches of :func:`spark_noop_decoding_free`, written once as
    ``parts`` uncompressed Parquet files in ``cache_dir`` and read by ``spark.read.parquet`` in ``parts`` tasks. It is
    what Spark does with these rows without a Python worker (the two variant columns are read as their structs of
    value and metadata, the same bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    arrow_path = cache_dir / f"{path.name}.batches.arrow"  # written by spark_noop_decoding_free
    parquet_dir = cache_dir / f"{path.name}.parquet-{parts}"
    if not parquet_dir.exists():
        tmp = parquet_dir.with_name(parquet_dir.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        reader = pa.ipc.open_file(pa.memory_map(str(arrow_path)))
        n = reader.num_record_batches
        for part in range(parts):
            batches = [reader.get_batch(i) for i in range(part * n // parts, (part + 1) * n // parts)]
            pq.write_table(pa.Table.from_batches(batches, reader.schema), str(tmp / f"part-{part}.parquet"),
                           compression="none")
        tmp.rename(parquet_dir)
    spark = SparkSession.getActiveSession()
    assert spark is not None, "spark_noop() starts the session first"
    where = str(parquet_dir)

    def run() -> int:
        # one task per file, as many as the Python reads have splits
        spark.read.option("maxPartitionBytes", str(1 << 40)).parquet(where).write.format("noop").mode("overwrite") \
            .save()
        return -1

    run()  # warm-up, not timed: the JVM compiles the Parquet reader (the other reads share spark_noop's warm-up)
    return run


def spark_cpu_seconds() -> float:
    """CPU seconds so far of this process, its reaped children, and the active session's JVM with its workers."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    return _cpu_seconds() + (process_tree_cpu(jvm_pid(spark)) if spark is not None else 0.0)


def planned_splits(path: Path, split_bytes: int | None = None) -> tuple[Any, list]:
    """The format reading ``path`` and the splits it plans (Spark's default ``maxPartitionBytes`` unless given)."""
    from spark_logsource.api import make_format

    fmt = make_format("mysql-binlog", str(path), {} if split_bytes is None else {"maxPartitionBytes": str(split_bytes)})
    return fmt, fmt.plan(fmt.list_files(), [])


def read_splits(path: Path, split_bytes: int | None = None) -> int:
    """Read ``path`` split after split in this process, as Spark's tasks would; return the row count."""
    fmt, splits = planned_splits(path, split_bytes)
    return sum(batch.num_rows for split in splits for batch in fmt.read_split(split, []))


@dataclass
class Timing:
    """Wall-clock seconds and the CPU seconds of this process plus its waited-for children."""

    wall: float
    cpu: float


def timed(label: str, action: Callable[[], int], expected_rows: int,
          cpu_seconds: Callable[[], float] = _cpu_seconds) -> Timing:
    """Run ``action`` once; check its row count (when it counts) and return its timing."""
    cpu_started = cpu_seconds()
    started = time.perf_counter()
    counted = action()
    timing = Timing(time.perf_counter() - started, cpu_seconds() - cpu_started)
    if counted >= 0 and counted != expected_rows:
        raise SystemExit(f"{label}: counted {counted} rows, the workload wrote {expected_rows}")
    log.info("%s: %.2f s wall, %.2f s CPU (%.0f rows/s)", label, timing.wall, timing.cpu, expected_rows / timing.wall)
    return timing


def profile_iter_batches(path: Path, top: int = 25) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    count_iter_batches(path)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench"))
    parser.add_argument("--rows", type=int, default=500_000, help="row changes in the binlog (at least)")
    parser.add_argument("--insert-rows-per-statement", type=int, default=DEFAULT_INSERT_ROWS_PER_STATEMENT,
                        help="rows of each multi-row INSERT (the statement text the changes view repeats per row)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of iter_batches")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark measurement")
    parser.add_argument("--no-pmr", action="store_true", help="skip python-mysql-replication")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each side-by-side measurement")
    parser.add_argument("--splits", type=int, default=0,
                        help="also read the file through Spark as this many splits (maxPartitionBytes)")
    parser.add_argument("--big-factor", type=int, default=10,
                        help="the peak-RSS comparison's second binlog has this many times the rows")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS comparison")
    parser.add_argument("--decoding-free", action="store_true",
                        help="also time Spark over our batches decoded beforehand (Spark's own cost: the ceiling), and "
                             "over the same rows as Parquet (Spark's own reader, no Python worker)")
    parser.add_argument("--shape", choices=("base", "wide", "narrow", "bulk"), default="base",
                        help="base: the 8-column table with updates and deletes; wide / narrow / bulk: see the "
                             "docstring")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    per_statement = (args.insert_rows_per_statement if args.shape == "base"
                     else args.rows if args.shape == "bulk" else SHAPES[args.shape][1])
    suffix = "" if per_statement == DEFAULT_INSERT_ROWS_PER_STATEMENT else f"-{per_statement}-per-insert"
    if args.shape != "base":
        suffix = f"-{args.shape}"
    workdir = args.workdir / f"mysql{suffix}"
    server, workload = prepare(workdir, args.rows, per_statement, args.shape)
    try:
        path = server.binlog_dir / workload.binlog
        size_mb = path.stat().st_size / 1e6
        n = workload.rows
        results: dict[str, list[Timing]] = {}

        def measure(key: str, action: Callable[[], int], cpu_seconds: Callable[[], float] = _cpu_seconds) -> None:
            results.setdefault(key, []).append(timed(key, action, n, cpu_seconds))

        count_iter_batches(path)  # warm-up, not timed: imports, the kernel, the page cache
        splits = len(planned_splits(path)[1])
        # side by side, --repeat times: a ratio is taken within one repetition (the machine is shared)
        for _ in range(args.repeat):
            measure("iter_batches", lambda: count_iter_batches(path))
            measure("iter_batches json", lambda: count_iter_batches(path, rowFormat="json"))
            if splits > 1:
                measure("splits in-process", lambda: read_splits(path))
                measure("one split in-process", lambda: read_splits(path, path.stat().st_size + 1))
            measure("iter_batches table", lambda: count_iter_batches(path, view="table", table=shape_table(args.shape)))
            measure("mariadb-binlog", lambda: run_mariadb_binlog(path))
        if args.shape == "base":
            measure("iter_batches query", lambda: count_iter_batches(path, includeQuery="true"))
        if not args.no_pmr:
            measure("python-mysql-replication", lambda: count_python_mysql_replication(server, workload.binlog))
        if not args.no_spark:
            spark_runs = {"spark noop": spark_noop(path)}
            if splits > 1:
                spark_runs["spark noop 1 split"] = spark_noop(path, maxPartitionBytes=str(path.stat().st_size + 1))
            if args.splits > 0:
                spark_runs["spark noop splits"] = spark_noop(
                    path, maxPartitionBytes=str(-(-path.stat().st_size // args.splits)))
            if args.decoding_free:
                spark_runs["spark noop decoding free"] = spark_noop_decoding_free(path, splits, workdir)
                spark_runs["spark noop parquet"] = spark_noop_parquet(path, splits, workdir)
            spark_runs["spark noop table"] = spark_noop(path, view="table", table=shape_table(args.shape))
            spark_runs["spark noop"]()  # warm-up, not timed: the Python workers start, the JVM compiles
            for _ in range(args.repeat):
                for key, run in spark_runs.items():
                    measure(key, run, spark_cpu_seconds)
                measure("mariadb-binlog (spark runs)", lambda: run_mariadb_binlog(path))
        profile = profile_iter_batches(path) if args.profile else None
    finally:
        server.stop()
    rss: list[tuple[str, int, int]] = []
    if not args.no_rss and args.big_factor > 1 and args.shape == "base":
        rss.append((path.name, *peak_rss_kib("mysql-binlog", path)))
        big_server, big = prepare(args.workdir / f"mysql{suffix}-x{args.big_factor}", args.rows * args.big_factor,
                                  per_statement)
        big_server.stop()
        big_path = big_server.binlog_dir / big.binlog
        rss.append((f"{big.binlog} ({args.big_factor}×)", *peak_rss_kib("mysql-binlog", big_path)))

    command = "python3 " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, REPO), *sys.argv[1:]])
    print(report(results, workload, size_mb, command, args.shape, args.splits, splits))
    if rss:
        print("\n| peak RSS, `iter_batches` (defaults), a fresh process | rows | KiB |\n|---|---:|---:|")
        for name, rows, kib in rss:
            print(f"| {name} | {rows:,} | {kib:,} |")
        print(f"| growth | | {100.0 * (rss[1][2] - rss[0][2]) / rss[0][2]:+.1f}% |")
    if profile is not None:
        print("\ncProfile of iter_batches (default options), top functions by own time:\n")
        print(profile)
    return 0


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def report(results: dict[str, list[Timing]], workload: Workload, size_mb: float, command: str, shape: str = "base",
           splits: int = 0, default_splits: int = 1) -> str:
    """Markdown: per reader the median wall and CPU seconds, rows/s, and its ratio to mariadb-binlog taken within
    each repetition (median, then every run)."""
    n = workload.rows
    labels = {
        "iter_batches": '`spark_logsource.iter_batches("mysql-binlog", f)` (defaults: Variant, includeQuery=false)',
        "iter_batches json": "`iter_batches(..., rowFormat=\"json\")`",
        "iter_batches query": "`iter_batches(..., includeQuery=\"true\")`³",
        "iter_batches table": f"`iter_batches(..., view=\"table\", table=\"{shape_table(shape)}\")`: typed columns⁵",
        "spark noop table": f"Spark `local[2]` → `noop`, `view=table` (`{shape_table(shape)}`), {default_splits} "
                            f'split{"s" if default_splits > 1 else ""}²⁵',
        "splits in-process": f"the file's {default_splits} default splits read one after another in this process",
        "one split in-process": "the file as one split in this process",
        "spark noop": f'Spark `local[2]`: `spark.read.format("mysql-binlog").load(f)` → `noop`, {default_splits} '
                      f'split{"s" if default_splits > 1 else ""} (the default `maxPartitionBytes`)²',
        "spark noop 1 split": "Spark `local[2]` → `noop`, 1 split²",
        "spark noop splits": f"Spark `local[2]` → `noop`, {splits} splits (`maxPartitionBytes`)²",
        "spark noop decoding free": f"the same Spark read with the decoding taken out: our batches, decoded "
                                    f"beforehand, from a memory-mapped Arrow file in {default_splits} "
                                    f"task{'s' if default_splits > 1 else ''}²",
        "spark noop parquet": f"Spark's own reader over the same rows: `spark.read.parquet` → `noop`, "
                              f"{default_splits} uncompressed file{'s' if default_splits > 1 else ''}, a task "
                              f"each (no Python worker)²",
        "mariadb-binlog": "`mariadb-binlog -v --base64-output=decode-rows f > /dev/null`",
        "python-mysql-replication": "python-mysql-replication `BinLogStreamReader` (loopback, rows events)¹",
    }
    if shape == "base":
        table = (f"{workload.inserts:,} inserts, {workload.updates:,} updates, {workload.deletes:,} deletes; 8 "
                 f"columns; {workload.per_statement} rows per INSERT statement")
    elif shape == "wide":
        table = (f"{workload.inserts:,} inserts; 50 columns: id, {WIDE_TEXTS} VARCHAR(64), {WIDE_JSONS} JSON; "
                 f"{workload.per_statement} rows per INSERT statement")
    elif shape == "bulk":
        table = (f"{workload.inserts:,} inserts by one INSERT ... SELECT in one transaction, then {workload.updates:,} "
                 f"updates by one UPDATE (every fifth row); 5 columns: INT id, DATETIME(6), DECIMAL(14,4), "
                 f"VARCHAR(64), INT")
    else:
        table = f"{workload.inserts:,} inserts; 2 integer columns; {workload.per_statement} rows per INSERT statement"
    lines = [
        f"Binlog ({shape}): MariaDB {mariadb_version()} ROW format, binlog_row_metadata=FULL, CRC32, "
        f"{n:,} row changes ({table}{'' if shape == 'bulk' else '; transactions of ~10 000 rows'}), {size_mb:.1f} MB, "
        f"uncompressed. "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        f"Command: `{command}`",
        "",
        "| reader | wall s (median) | CPU s² (median) | CPU s per 1M rows | rows/s "
        "| × mariadb-binlog, wall (median; each run) | × mariadb-binlog, CPU⁴ (median; each run) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, label in labels.items():
        if key not in results:
            continue
        runs = results[key]
        wall = _median([t.wall for t in runs])
        cpu = _median([t.cpu for t in runs])
        base = results["mariadb-binlog (spark runs)" if key.startswith("spark noop") else "mariadb-binlog"]
        ratios = [b.wall / t.wall for t, b in zip(runs, base, strict=False)]  # same repetition
        each = ", ".join(f"{r:.2f}" for r in ratios)
        cpu_ratios = [b.cpu / t.cpu for t, b in zip(runs, base, strict=False)]
        by_cpu = f"{_median(cpu_ratios):.2f} ({', '.join(f'{r:.2f}' for r in cpu_ratios)})"
        lines.append(f"| {label} | {wall:.2f} | {cpu:.2f} | {cpu / n * 1e6:.2f} | {n / wall:,.0f} "
                     f"| {_median(ratios):.2f} ({each}) | {by_cpu} |")
    lines += ["",
              "¹ one run; the server's CPU (reading and sending the file) is not counted. "
              "² this process and its children (mariadb-binlog); for Spark, also the JVM and its Python workers "
              "(from /proc). "
              "³ the changes view's `query` column filled: it repeats each row's statement on every row it changed "
              "(a 1000-row INSERT of this table is ~97 KB of text, copied onto each of its 1000 rows); one run. "
              "⁴ CPU seconds of mariadb-binlog over ours, in the same repetition: steadier than wall time on a shared "
              "machine (one process each; python-mysql-replication's excludes the server's). "
              "⁵ the table's own typed columns (`docs/formats/mysql-typed.md`), converted by the compiled kernel "
              "(`mysql/table/kernel.py`)."]
    return "\n".join(lines)


def mariadb_version() -> str:
    out = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout
    parts = out.split()
    return parts[2].split("-")[0] if len(parts) > 2 else "?"


if __name__ == "__main__":
    sys.exit(main())
