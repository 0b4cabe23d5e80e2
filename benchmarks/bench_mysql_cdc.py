"""Benchmark: typed CDC streaming (``view=table``) of a MariaDB table, against the batch read of the same binlogs,
and the commit-to-row latency of a stream under a 1 s trigger (issue #23, "Measure").

1. Throughput. A real MariaDB 10.11 (``binlog_format=ROW``, ``binlog_row_metadata=FULL``, ``max_binlog_size`` 64
   MiB) writes ≥ ``--rows`` row changes to one table of mixed types (INT key, BIGINT, SMALLINT, VARCHAR,
   DECIMAL, DATETIME(6), TEXT, TINYINT UNSIGNED, DOUBLE, MariaDB JSON): multi-row INSERT transactions, then UPDATE
   and DELETE transactions, each of a few statements. The binlogs holding them (the CREATE TABLE included) are
   kept with the datadir under ``--workdir`` and copied into a directory of their own. Then, side by side,
   ``--repeat`` times, each draining Arrow batches:

   * ``iter_batches("mysql-binlog", files, view="table", table=...)``: the batch read, the peer of the others
     (issue floor: streams ≥ 0.7× its rows/s);
   * the directory tail: ``spark_logsource.follow("mysql-binlog", directory, view="table", ...,
     stop_when_idle=True)``, the same ranges Spark would plan;
   * the live source: ``mysql-replication`` with ``view=table`` through the LogStream calls Spark makes
     (``latest_offset`` with one binlog per range, ``plan``, ``read_slice``) until the workload's last binlog is
     read: the driver's walk of the range's DDL (a dump decoding QUERY events only) and the tasks' binlog dumps
     over loopback TCP;
   * Spark ``local[2]``: ``spark.readStream`` of the directory with ``trigger(availableNow=True)`` into the
     ``noop`` sink, against ``spark.read`` of the same directory into ``noop``.

2. Latency (issue floor: p99 ≤ 3 s). A writer commits one row every ``--period`` seconds into another table,
   its ``DATETIME(6)`` column set from the client clock (UTC) just before COMMIT. A Spark query
   (``readStream.format("mysql-replication")``, ``view=table``, ``trigger(processingTime="1 second")``,
   ``foreachBatch``) stamps each row's arrival; p50/p95/p99 of (arrival − commit) over the rows written in
   ``--seconds``. The same with ``follow()`` in this process, polling every ``--trigger`` seconds.

    python3 benchmarks/bench_mysql_cdc.py [--workdir /tmp/spark-logsource-bench-cdc] [--rows 300000] [--repeat 3]
        [--seconds 25] [--period 0.05] [--trigger 1] [--no-spark] [--no-latency]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cdc_report import (  # the benchmarks/ folder is sys.path[0]
    add_common_arguments,
    command_line,
    latency_table,
    load_average,
    peer_ratios,
    setup,
    throughput_table,
    time_spark,
)
from local_spark import timed
from mariadb_server import REPLICATION_PASSWORD, REPLICATION_USER, REPO, open_server

from tests.support.servers.mariadb import MariaDBServer

log = logging.getLogger("bench_mysql_cdc")

WORKLOAD_VERSION = 1
TABLE = "cdcbench.items"
TICKS = "cdcbench.ticks"
TABLE_DDL = f"""CREATE TABLE {TABLE} (
    id INT NOT NULL PRIMARY KEY,
    customer BIGINT NOT NULL,
    qty SMALLINT NOT NULL,
    sku VARCHAR(40) NOT NULL,
    price DECIMAL(12,2),
    created DATETIME(6),
    note TEXT,
    status TINYINT UNSIGNED,
    score DOUBLE,
    doc JSON)"""
ROWS_PER_INSERT = 500
SETTINGS = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "binlog_checksum": "CRC32",
            "log_bin_compress": "OFF", "max_binlog_size": 64 << 20}


def _values(first: int, count: int) -> str:
    return ", ".join(
        f"({n}, {n % 5003}, {n % 97 + 1}, 'SKU-{n:08d}', {(n % 100000) / 100 - 300:.2f}, "
        f"'2024-{1 + n % 12:02d}-{1 + n % 28:02d} {n % 24:02d}:{n % 60:02d}:{n % 59:02d}.{n % 999999:06d}', "
        f"{'NULL' if n % 7 == 0 else repr(f'note {n} ' + 'x' * (n % 40))}, {n % 256}, {n / 7:.6f}, "
        f"'{{\"n\": {n}, \"tag\": \"t{n % 13}\", \"ok\": {'true' if n % 2 else 'false'}}}')"
        for n in range(first, first + count))


def make_workload(server: MariaDBServer, rows: int) -> dict[str, Any]:
    """≥ ``rows`` changes of :data:`TABLE` in fresh binlogs (the CREATE TABLE in the first): ~70 % inserts in
    transactions of 4 INSERTs, ~20 % updates and ~10 % deletes in transactions of 2 statements each."""
    for name, value in SETTINGS.items():
        server.set_global(name, value)
    server.execute("DROP DATABASE IF EXISTS cdcbench")
    server.flush_logs()
    first = server.binlog_files()[-1].name
    server.execute("CREATE DATABASE cdcbench CHARACTER SET utf8mb4")
    server.execute(TABLE_DDL)
    counts = {"inserts": 0, "updates": 0, "deletes": 0}
    inserted = 0
    while inserted < rows * 0.7:
        server.execute("BEGIN")
        for _ in range(4):
            counts["inserts"] += server.execute(f"INSERT INTO {TABLE} VALUES {_values(inserted, ROWS_PER_INSERT)}")
            inserted += ROWS_PER_INSERT
        server.execute("COMMIT")
    lo, step = 0, 1000
    while counts["updates"] < rows * 0.2:
        server.execute("BEGIN")
        for _ in range(2):
            counts["updates"] += server.execute(
                f"UPDATE {TABLE} SET qty = qty + 1, price = price * 1.1, note = CONCAT('u ', sku), created = "
                f"NOW(6) WHERE id >= {lo} AND id < {lo + step}")
            lo += step
        server.execute("COMMIT")
    hi = inserted
    while sum(counts.values()) < rows:
        server.execute("BEGIN")
        for _ in range(2):
            counts["deletes"] += server.execute(f"DELETE FROM {TABLE} WHERE id >= {hi - step} AND id < {hi}")
            hi -= step
        server.execute("COMMIT")
    server.flush_logs()
    names = [p.name for p in server.binlog_files()]
    files = names[names.index(first):-1]
    end_file = names[-1]
    return {"version": WORKLOAD_VERSION, "requested_rows": rows, "files": files, "end_file": end_file,
            "rows": sum(counts.values()), **counts}


def prepare(workdir: Path, rows: int) -> tuple[MariaDBServer, dict[str, Any], Path]:
    """The kept server of ``workdir``, its workload (made on first use) and the directory of its binlog copies."""
    marker = workdir / "workload.json"
    cached = json.loads(marker.read_text()) if marker.exists() else None
    if cached is not None and (cached.get("version") != WORKLOAD_VERSION or cached.get("requested_rows") != rows):
        cached = None
    if cached is None and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    server = open_server(workdir / "server")
    server.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
    copies = workdir / "binlogs"
    if cached is None:
        started = time.perf_counter()
        cached = make_workload(server, rows)
        log.info("made %d row changes in %d binlogs in %.1f s", cached["rows"], len(cached["files"]),
                 time.perf_counter() - started)
        copies.mkdir()
        for name in cached["files"]:
            shutil.copy2(server.binlog_dir / name, copies / name)
        marker.write_text(json.dumps(cached))
    return server, cached, copies


# -- the readers -------------------------------------------------------------------------------------------------
def batch_table(files: list[Path]) -> int:
    import spark_logsource

    return sum(b.num_rows for b in spark_logsource.iter_batches("mysql-binlog", [str(f) for f in files],
                                                               view="table", table=TABLE))


def tail_follow(directory: Path) -> int:
    import spark_logsource

    return sum(b.num_rows for b, _offset in spark_logsource.follow(
        "mysql-binlog", str(directory), stop_when_idle=True, view="table", table=TABLE,
        startingPosition="earliest"))


def live_options(server: MariaDBServer, **extra: str) -> dict[str, str]:
    return {"uri": f"mysql://{REPLICATION_USER}@127.0.0.1:{server.port}", "password": REPLICATION_PASSWORD,
            "view": "table", "table": TABLE, **extra}


def live_stream(server: MariaDBServer, workload: dict[str, Any]) -> int:
    """The live stream's calls, one binlog per range, until the workload's last binlog is read."""
    from spark_logsource.api import make_format
    from spark_logsource.mysql.position import binlog_number
    from spark_logsource.streaming.stream import ReadBudget

    stream = make_format("mysql-replication", [], live_options(
        server, serverId="7400", startingPosition=json.dumps({"file": workload["files"][0], "pos": 4}))).stream()
    last = workload["files"][-1]
    stop = (binlog_number(last)[1], (server.binlog_dir / last).stat().st_size)
    rows = 0
    start = stream.initial_offset()
    try:
        while (binlog_number(start["file"])[1], int(start["pos"])) < stop:
            nxt = stream.latest_offset(start, ReadBudget(max_files=1))
            if json.dumps(nxt, sort_keys=True) == json.dumps(start, sort_keys=True):
                raise SystemExit(f"the live stream stopped at {start['file']}:{start['pos']}")
            for slice_ in stream.plan(start, nxt):
                rows += sum(b.num_rows for b in stream.read_slice(slice_))
            start = nxt
    finally:
        stream.stop()
    return rows


def live_batch(server: MariaDBServer, workload: dict[str, Any]) -> int:
    """The same range of the live server read as a batch (``endingPosition``): the live stream's own peer."""
    import spark_logsource

    last = workload["files"][-1]
    options = live_options(server, serverId="7410",
                           startingPosition=json.dumps({"file": workload["files"][0], "pos": 4}),
                           endingPosition=json.dumps({"file": last, "pos": (server.binlog_dir / last).stat().st_size}))
    return sum(b.num_rows for b in spark_logsource.iter_batches("mysql-replication", [], **options))




# -- latency -----------------------------------------------------------------------------------------------------
class TickWriter:
    """One row per transaction every ``period`` seconds, its ``committed`` column the client clock (UTC) just
    before COMMIT."""

    def __init__(self, server: MariaDBServer, period: float) -> None:
        self.server, self.period = server, period
        self.stop_event = threading.Event()
        self.written = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import pymysql

        conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
        next_at = time.monotonic()
        try:
            with conn.cursor() as cur:
                while not self.stop_event.is_set():
                    cur.execute("BEGIN")
                    cur.execute(f"INSERT INTO {TICKS} (note, committed) VALUES ('tick', %s)",
                                (dt.datetime.now(dt.UTC).replace(tzinfo=None),))
                    cur.execute("COMMIT")
                    self.written += 1
                    next_at += self.period
                    time.sleep(max(0.0, next_at - time.monotonic()))
        finally:
            conn.close()

    def __enter__(self) -> TickWriter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join()


def _epoch(ntz: dt.datetime) -> float:
    return ntz.replace(tzinfo=dt.UTC).timestamp()


def follow_latency(server: MariaDBServer, seconds: float, period: float, trigger: float) -> list[float]:
    import spark_logsource

    delays: list[float] = []
    with TickWriter(server, period):
        deadline = time.monotonic() + seconds
        batches = spark_logsource.follow("mysql-replication", [], poll_interval=trigger, **live_options(
            server, table=TICKS, serverId="7500", startingPosition="latest"))
        try:
            for batch, _offset in batches:
                seen = time.time()
                delays.extend(seen - _epoch(after["committed"]) for after in batch.column("after").to_pylist())
                if time.monotonic() > deadline:
                    break
        finally:
            batches.close()
    return delays


def spark_latency(spark: Any, server: MariaDBServer, seconds: float, period: float, trigger: float) -> list[float]:
    delays: list[float] = []

    def sink(df: Any, _batch_id: int) -> None:
        # committed is a DATETIME (timestamp_ntz) holding UTC: as microseconds since the epoch
        micros = df.selectExpr("unix_micros(cast(after.committed AS timestamp)) AS us").toArrow().column("us")
        seen = time.time()
        delays.extend(seen - us / 1e6 for us in micros.to_pylist())

    options = live_options(server, table=TICKS, serverId="7600", startingPosition="latest")
    reader = spark.readStream.format("mysql-replication")
    for key, value in options.items():
        reader = reader.option(key, value)
    with tempfile.TemporaryDirectory(prefix="bench-cdc-latency-") as checkpoint:
        query = (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
                 .trigger(processingTime=f"{trigger:g} seconds").start())
        try:
            deadline = time.monotonic() + 300
            while query.lastProgress is None and time.monotonic() < deadline:  # the first (empty) batch ran
                time.sleep(0.2)
            with TickWriter(server, period) as writer:
                time.sleep(seconds)  # the writer's pace, not a wait for a state
            deadline = time.monotonic() + 60
            while len(delays) < writer.written and query.isActive and time.monotonic() < deadline:
                time.sleep(0.1)  # the query drains what the writer left
        finally:
            query.stop()
    return delays


def percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]

    return statistics.median(ordered), at(0.95), at(0.99)


# -- report ------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench-cdc"))
    parser.add_argument("--rows", type=int, default=300_000, help="row changes of the table (at least)")
    add_common_arguments(parser, seconds=25.0)
    args = parser.parse_args(argv)
    setup()

    server, workload, copies = prepare(args.workdir, args.rows)
    n = workload["rows"]
    files = [copies / name for name in workload["files"]]
    results: dict[str, list[tuple[float, float]]] = {}
    latency: dict[str, list[float]] = {}
    spark = None
    try:
        server.execute(f"CREATE TABLE IF NOT EXISTS {TICKS} (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(20), "
                       "committed DATETIME(6))")
        batch_table(files)  # warm-up, not timed: imports, the kernel, the page cache
        for _ in range(args.repeat):
            results.setdefault("batch", []).append(timed("batch", lambda: batch_table(files), n))
            results.setdefault("tail", []).append(timed("tail", lambda: tail_follow(copies), n))
            results.setdefault("live batch", []).append(timed("live batch", lambda: live_batch(server, workload), n))
            results.setdefault("live", []).append(timed("live", lambda: live_stream(server, workload), n))
        if not args.no_spark:
            spark = time_spark(results, "mysql-binlog", copies, {"view": "table", "table": TABLE}, n, args.repeat)
        if not args.no_latency:
            latency["follow"] = follow_latency(server, args.seconds, args.period, args.trigger)
            if spark is not None:
                latency["spark"] = spark_latency(spark, server, args.seconds, args.period, args.trigger)
    finally:
        if spark is not None:
            spark.stop()
        server.stop()

    print(report(results, latency, workload, files, command_line(__file__, REPO), args))
    return 0


#: Each reader's peer: the one it is divided by in the same repetition.
PEERS = {"batch": "batch", "tail": "batch", "live batch": "batch", "live": "live batch", "spark batch": "spark batch",
         "spark stream": "spark batch"}


def report(results: dict[str, list[tuple[float, float]]], latency: dict[str, list[float]],
           workload: dict[str, Any], files: list[Path], command: str, args: argparse.Namespace) -> str:
    n = workload["rows"]
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    labels = {
        "batch": f'`iter_batches("mysql-binlog", files, view="table", table="{TABLE}")` (the peer)',
        "tail": '`follow("mysql-binlog", directory, view="table", stop_when_idle=True)`: the directory tail',
        "live batch": '`iter_batches("mysql-replication", view="table", endingPosition=...)`: the same binlogs '
                      "from the server (loopback TCP), a batch¹",
        "live": "`mysql-replication` `view=table` stream: LogStream calls, one binlog per range (loopback TCP); "
                "its peer: the live batch above¹",
        "spark batch": "Spark `local[2]`: `spark.read` of the directory, `view=table` → `noop` (the peer)²",
        "spark stream": "Spark `local[2]`: `readStream`, `trigger(availableNow=True)` → `noop`²",
    }
    lines = [
        f"Workload: {n:,} row changes of `{TABLE}` ({workload['inserts']:,} inserts, {workload['updates']:,} "
        f"updates, {workload['deletes']:,} deletes; 10 columns: INT, BIGINT, SMALLINT, VARCHAR, DECIMAL, "
        f"DATETIME(6), TEXT, TINYINT UNSIGNED, DOUBLE, JSON; transactions of 2–4 statements), {len(files)} "
        f"binlogs, {size_mb:.1f} MB, MariaDB 10.11, binlog_row_metadata=FULL, CRC32. {os.cpu_count()} cores, "
        f"load average {load_average()} at the end.",
        "",
        f"Command: `{command}`",
        "",
        *throughput_table(results, labels, PEERS, n, "rows"),
    ]
    if "live" in results:
        direct, _cpu = peer_ratios(results["live"], results["batch"])
        lines += ["", "The live stream against the file batch (the issue's peer), wall: "
                      f"{statistics.median(direct):.2f} ({', '.join(f'{x:.2f}' for x in direct)})."]
    lines += ["", "¹ this process only: the server's dump threads and the driver's DDL dump run in "
                  "mariadbd, not counted. ² this process, the JVM and its Python workers (from /proc)."]
    if latency:
        lines += ["", f"Commit-to-row latency: one row per transaction every {args.period:g} s for "
                      f"{args.seconds:g} s, the row's DATETIME(6) set from the client clock just before COMMIT.", ""]
        names = {"follow": f"`follow(\"mysql-replication\", view=\"table\", poll_interval={args.trigger:g})`",
                 "spark": f"Spark `readStream`, `trigger(processingTime=\"{args.trigger:g} second\")`, "
                          "`foreachBatch`"}
        lines += latency_table(latency, names, percentiles)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
