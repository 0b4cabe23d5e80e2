"""Benchmark: the initial snapshot of a MariaDB table (``spark_logsource.mysql.snapshot``) against ``mariadb-dump``.

Makes, on a real MariaDB 10.11 (``benchmarks/mariadb_server.py``; the datadir is kept under ``--workdir`` and
reused while ``--rows`` is the same), a table ``bench.snap`` of ``--rows`` rows of mixed types::

    id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), at DATETIME(6), note VARCHAR(64) NULL (1 in 7 NULL)

then, ``--repeat`` times side by side (a ratio is taken within one repetition: the machine is shared):

* ``mariadb-dump --single-transaction --quick bench snap > /dev/null`` over loopback TCP (``--quick``, rows
  streamed, is its default; given to say so);
* our snapshot, 1 task: ``plan_snapshot(settings, "bench.snap", --chunks)`` in this process, then ``read_chunk`` of
  every chunk, one after another, in one worker process (multiprocessing, spawn, started beforehand, as Spark's
  Python workers are), draining the Arrow batches;
* our snapshot, 2 tasks: the same plan, its chunks shared by 2 worker processes;
* the client library alone (a limit, not a peer): the whole table streamed through the snapshot's PyMySQL session
  in this process, values left as the server's text.

With no writer, every chunk opens its snapshot at the plan's position and has nothing to roll back. Then, once
(``--writer-repeat``), the dump and the 2-task snapshot each run while a writer thread updates 1 % of the rows
(``--writer-fraction``; 100-row ``UPDATE ... WHERE id IN (...)`` transactions, random keys, as fast as it can)
from the moment the read starts (for the snapshot: once the plan is made, so its updates fall into the chunks'
windows, which the chunks read from the binlog and undo). Printed: rows/s, the ratio to mariadb-dump in the same
repetition (median and each run), the client CPU seconds (ours: the plan in this process plus the workers' own
CPU; the dump: the child's) and the server's (``mariadbd`` from /proc). ``--profile`` adds a cProfile of one
``read_chunk`` in this process (and of one whose window holds the writer's updates).

    python3 benchmarks/bench_mysql_snapshot.py [--workdir /tmp/spark-logsource-bench] [--rows 1000000]
        [--chunks 8] [--repeat 3] [--writer-repeat 1] [--writer-fraction 0.01] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import multiprocessing
import os
import pstats
import random
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from local_spark import process_tree_cpu  # the benchmarks/ folder is sys.path[0]
from mariadb_server import REPLICATION_PASSWORD, REPLICATION_USER, REPO, open_server

from tests.support.servers.mariadb import MariaDBServer

log = logging.getLogger("bench_mysql_snapshot")

WORKLOAD_VERSION = 1
DB, TABLE = "bench", "snap"
DDL = (f"CREATE TABLE {DB}.{TABLE} (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, "
       "amount DECIMAL(12,2) NOT NULL, at DATETIME(6) NOT NULL, note VARCHAR(64) NULL)")
FILL_STEP = 100_000


# -- the table ------------------------------------------------------------------------------------------------
def _fill(server: MariaDBServer, rows: int) -> None:
    server.execute(f"DROP DATABASE IF EXISTS {DB}")
    server.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
    server.execute(DDL)
    # MariaDB's Sequence engine (seq_1_to_N) makes the rows inside the server: no client round trip per row
    for lo in range(1, rows + 1, FILL_STEP):
        hi = min(rows, lo + FILL_STEP - 1)
        server.execute(
            f"INSERT INTO {DB}.{TABLE} SELECT seq, CONCAT('name ', seq), (seq % 100000) / 100 - 300, "
            "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL (seq * 7919) % 1000000 MICROSECOND, "
            f"IF(seq % 7 = 0, NULL, CONCAT('note ', seq, ' ', REPEAT('x', seq % 40))) FROM {DB}.seq_{lo}_to_{hi}")


def prepare(workdir: Path, rows: int) -> MariaDBServer:
    """Start the kept server of ``workdir``; make the table when the kept one is not of ``rows`` rows."""
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / "workload.json"
    server = open_server(workdir / "server")
    try:
        cached = json.loads(marker.read_text()) if marker.exists() else None
        if cached == {"version": WORKLOAD_VERSION, "rows": rows}:
            (count,) = server.query(f"SELECT COUNT(*) FROM {DB}.{TABLE}")[0]
            if count == rows:
                log.info("using the kept table %s.%s (%d rows)", DB, TABLE, rows)
                return server
        started = time.perf_counter()
        _fill(server, rows)
    except BaseException:
        server.stop()
        raise
    marker.write_text(json.dumps({"version": WORKLOAD_VERSION, "rows": rows}))
    log.info("made %s.%s with %d rows in %.1f s", DB, TABLE, rows, time.perf_counter() - started)
    return server


# -- the writer -----------------------------------------------------------------------------------------------
class Writer:
    """A thread that updates ``count`` distinct random rows, 100 per transaction, as fast as it can."""

    def __init__(self, server: MariaDBServer, rows: int, count: int, seed: int) -> None:
        self.server = server
        self.keys = random.Random(seed).sample(range(1, rows + 1), count)
        self.updated = 0
        self.seconds = 0.0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="bench-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        if self.error is not None:
            raise SystemExit(f"the writer failed: {self.error}")

    def _run(self) -> None:
        import pymysql

        started = time.perf_counter()
        try:
            conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
            try:
                with conn.cursor() as cur:
                    for lo in range(0, len(self.keys), 100):
                        part = self.keys[lo:lo + 100]
                        cur.execute("BEGIN")
                        self.updated += cur.execute(
                            f"UPDATE {DB}.{TABLE} SET amount = amount + 1, note = CONCAT('updated ', id) "
                            f"WHERE id IN ({', '.join(str(k) for k in part)})")
                        cur.execute("COMMIT")
            finally:
                conn.close()
        except BaseException as exc:  # reported by join()
            self.error = exc
        self.seconds = time.perf_counter() - started


# -- the readers ----------------------------------------------------------------------------------------------
def _worker_init() -> None:
    import pyarrow  # noqa: F401  (imported before the timed tasks, as in a warm Spark Python worker)

    import spark_logsource.mysql.snapshot  # noqa: F401


def _worker_pid(_: int) -> int:
    return os.getpid()


def _read_one(args: tuple[Any, Any, Any]) -> tuple[int, float, int]:
    """One task: a chunk drained; its rows, this process's CPU seconds for it, and the binlog position it read at
    (taken from the chunk's log line: the window's end)."""
    from spark_logsource.mysql.snapshot import read_chunk

    settings, plan, chunk = args
    read_at: list[int] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "row(s) as of" in record.msg and record.args:
                read_at.append(int(record.args[-1]))  # type: ignore[index, call-overload]

    logger = logging.getLogger("spark_logsource.mysql.snapshot.chunk")
    logger.setLevel(logging.INFO)
    grab = Grab()
    logger.addHandler(grab)
    try:
        cpu = time.process_time()
        rows = sum(batch.num_rows for batch in read_chunk(settings, plan, chunk))
        cpu = time.process_time() - cpu
    finally:
        logger.removeHandler(grab)
    return rows, cpu, read_at[0] if read_at else -1


@dataclass
class Run:
    """One timed read: wall seconds, client and server CPU seconds, rows, and for ours the window sizes."""

    wall: float
    cpu: float
    server_cpu: float
    rows: int
    window_bytes: list[int] = field(default_factory=list)
    updated: int = 0
    writer_seconds: float = 0.0


class Pools:
    """Spawned worker pools of 1 and 2 processes, started and warmed before any timing."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.pools = {n: context.Pool(n, initializer=_worker_init) for n in (1, 2)}
        for n, pool in self.pools.items():
            pids: set[int] = set()
            while len(pids) < n:  # every worker has run its initializer once it has answered
                pids.update(pool.map(_worker_pid, range(4 * n), chunksize=1))

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
            pool.join()


def snapshot_read(settings: Any, pools: Pools, tasks: int, chunks: int, server_pid: int,
                  writer: Writer | None = None) -> Run:
    from spark_logsource.mysql.snapshot import plan_snapshot

    server_cpu = process_tree_cpu(server_pid)
    started = time.perf_counter()
    cpu = time.process_time()
    plan = plan_snapshot(settings, f"{DB}.{TABLE}", chunks)
    cpu = time.process_time() - cpu
    if writer is not None:
        writer.start()
    results = pools.pools[tasks].map(_read_one, [(settings, plan, c) for c in plan.chunks], chunksize=1)
    wall = time.perf_counter() - started
    server_cpu = process_tree_cpu(server_pid) - server_cpu
    if writer is not None:
        writer.join()
    return Run(wall, cpu + sum(r[1] for r in results), server_cpu, sum(r[0] for r in results),
               [r[2] - plan.pos for r in results], writer.updated if writer is not None else 0,
               writer.seconds if writer is not None else 0.0)


def client_drain(settings: Any, rows: int) -> Run:
    """The client library alone: the whole table through the snapshot's session (PyMySQL, an unbuffered cursor,
    values as the server's text) in this process, nothing decoded: the floor of any reader built on it."""
    from spark_logsource.mysql.snapshot.session import open_session

    started = time.perf_counter()
    cpu = time.process_time()
    count = 0
    with open_session(settings, f"{DB}.{TABLE}") as session:
        for _ in session.stream(f"SELECT * FROM {DB}.{TABLE} ORDER BY id", doing="draining the table"):
            count += 1
    return Run(time.perf_counter() - started, time.process_time() - cpu, 0.0, count)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dump_command(server: MariaDBServer) -> list[str]:
    return ["mariadb-dump", "--protocol=TCP", "-h", "127.0.0.1", "-P", str(server.port), "-u", REPLICATION_USER,
            "--single-transaction", "--quick", DB, TABLE]


def dump_read(server: MariaDBServer, rows: int, writer: Writer | None = None) -> Run:
    env = {**os.environ, "MYSQL_PWD": REPLICATION_PASSWORD}  # not on the command line (ps would show it)
    server_cpu = process_tree_cpu(server._proc.pid)  # type: ignore[union-attr]
    cpu = _children_cpu()
    started = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(dump_command(server), stdout=devnull, env=env)
        if writer is not None:
            writer.start()
        if proc.wait() != 0:
            raise SystemExit(f"mariadb-dump exited with {proc.returncode}")
    wall = time.perf_counter() - started
    run = Run(wall, _children_cpu() - cpu, process_tree_cpu(server._proc.pid) - server_cpu, rows)  # type: ignore
    if writer is not None:
        writer.join()
        run.updated = writer.updated
        run.writer_seconds = writer.seconds
    return run


def profile_chunk(settings: Any, server: MariaDBServer | None, rows: int, chunks: int, updates: int,
                  top: int = 22) -> str:
    """cProfile of ``read_chunk`` of the plan's middle chunk in this process (after a writer's ``updates``
    between the plan and the read when ``server`` is given)."""
    from spark_logsource.mysql.snapshot import plan_snapshot, read_chunk

    plan = plan_snapshot(settings, f"{DB}.{TABLE}", chunks)
    if server is not None:
        writer = Writer(server, rows, updates, seed=99)
        writer.start()
        writer.join()
    chunk = plan.chunks[len(plan.chunks) // 2]
    for _ in read_chunk(settings, plan, chunk):  # warm-up, not profiled: the lazy imports of a first read
        pass
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    count = sum(batch.num_rows for batch in read_chunk(settings, plan, chunk))
    profiler.disable()
    wall = time.perf_counter() - started
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    out.write("By cumulative time (the phases):\n")
    stats.sort_stats("cumulative").print_stats(top)
    out.write("By own time:\n")
    stats.sort_stats("tottime").print_stats(top)
    return f"chunk {chunk.index} of {len(plan.chunks)}: {count:,} rows, {wall:.2f} s under the profiler\n" \
           + out.getvalue()


# -- the report -----------------------------------------------------------------------------------------------
def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


LABELS = {
    "dump": "`mariadb-dump --single-transaction --quick bench snap > /dev/null` (TCP)",
    "ours 1": "snapshot, 1 task: `plan_snapshot` + `read_chunk` of each chunk in 1 worker process",
    "ours 2": "snapshot, 2 tasks: the same chunks in 2 worker processes",
    "drain": "the client library alone: PyMySQL streaming the table, nothing decoded, 1 process (a limit)",
    "dump writer": "`mariadb-dump`, a writer updating {pct} of the rows during it",
    "ours 2 writer": "snapshot, 2 tasks, a writer updating {pct} of the rows during it",
}


def report(results: dict[str, list[Run]], rows: int, chunks: int, command: str, loads: tuple[float, float],
           pct: str) -> str:
    lines = [
        f"Table `{DB}.{TABLE}`: {rows:,} rows (id INT primary key, VARCHAR(40), DECIMAL(12,2), DATETIME(6), "
        f"VARCHAR(64) NULL in 1 of 7 rows); MariaDB {mariadb_version()}; {chunks} chunks planned; "
        f"{os.cpu_count()} cores, load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end.",
        "",
        f"Command: `{command}`",
        "",
        "| reader | wall s (median) | rows/s (median) | × mariadb-dump, wall (median; each run) | client CPU s "
        "(median) | server CPU s (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in LABELS.items():
        runs = results.get(key)
        if not runs:
            continue
        base = results["dump writer" if key.endswith("writer") else "dump"]
        ratios = [b.wall / r.wall for r, b in zip(runs, base, strict=False)]
        wall = _median([r.wall for r in runs])
        lines.append(f"| {label.format(pct=pct)} | {wall:.2f} | {rows / wall:,.0f} | {_median(ratios):.2f} "
                     f"({', '.join(f'{x:.2f}' for x in ratios)}) | {_median([r.cpu for r in runs]):.2f} "
                     f"| {'–' if key == 'drain' else format(_median([r.server_cpu for r in runs]), '.2f')} |")
    for key in ("dump writer", "ours 2 writer"):
        for run in results.get(key, []):
            windows = f"; chunk windows {min(run.window_bytes):,}–{max(run.window_bytes):,} binlog bytes" \
                if run.window_bytes else ""
            lines.append(f"\n{key}: the writer updated {run.updated:,} rows in {run.writer_seconds:.2f} s{windows}.")
    lines += ["", "Client CPU: ours is the plan in the driver plus each task's own CPU in its worker; the dump's is "
              "the child process's. Server CPU: mariadbd's, from /proc (it includes the writer's updates)."]
    return "\n".join(lines)


def mariadb_version() -> str:
    out = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout
    parts = out.split()
    return parts[2].split("-")[0] if len(parts) > 2 else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=8, help="chunks the plan cuts the table into")
    parser.add_argument("--repeat", type=int, default=3, help="side-by-side repetitions with no writer")
    parser.add_argument("--writer-repeat", type=int, default=1, help="side-by-side repetitions with the writer")
    parser.add_argument("--writer-fraction", type=float, default=0.01, help="share of the rows the writer updates")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one read_chunk")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("spark_logsource").setLevel(logging.WARNING)

    from spark_logsource.mysql.stream.client import parse_uri

    load_start = os.getloadavg()[0]
    server = prepare(args.workdir / "mysql-snapshot", args.rows)
    pools: Pools | None = None
    profiles: list[str] = []
    results: dict[str, list[Run]] = {}
    try:
        settings = parse_uri(f"mysql://{REPLICATION_USER}@127.0.0.1:{server.port}", REPLICATION_PASSWORD)
        server_pid = server._proc.pid  # type: ignore[union-attr]
        pools = Pools()
        updates = max(1, int(args.rows * args.writer_fraction))

        def measure(key: str, action: Callable[[], Run]) -> None:
            run = action()
            if run.rows != args.rows:
                raise SystemExit(f"{key}: {run.rows} rows, the table has {args.rows}")
            log.info("%s: %.2f s wall, %.2f s client CPU, %.2f s server CPU (%.0f rows/s)", key, run.wall, run.cpu,
                     run.server_cpu, args.rows / run.wall)
            results.setdefault(key, []).append(run)

        for tasks in (1, 2):  # warm-up, not timed: the workers' first reads import lazily; the buffer pool
            snapshot_read(settings, pools, tasks, args.chunks, server_pid)
        dump_read(server, args.rows)
        for _ in range(args.repeat):
            measure("dump", lambda: dump_read(server, args.rows))
            measure("ours 1", lambda: snapshot_read(settings, pools, 1, args.chunks, server_pid))
            measure("ours 2", lambda: snapshot_read(settings, pools, 2, args.chunks, server_pid))
            measure("drain", lambda: client_drain(settings, args.rows))
        for seed in range(args.writer_repeat):
            measure("dump writer", partial(dump_read, server, args.rows, Writer(server, args.rows, updates, seed)))
            measure("ours 2 writer", partial(snapshot_read, settings, pools, 2, args.chunks, server_pid,
                                             Writer(server, args.rows, updates, seed)))
        if args.profile:
            profiles.append(profile_chunk(settings, None, args.rows, args.chunks, updates))
            profiles.append(profile_chunk(settings, server, args.rows, args.chunks, updates))
    finally:
        if pools is not None:
            pools.close()
        server.stop()
    command = "python3 " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, REPO), *sys.argv[1:]])
    print(report(results, args.rows, args.chunks, command, (load_start, os.getloadavg()[0]),
                 f"{100 * args.writer_fraction:g} %"))
    for title, text in zip(("no writer", f"after the writer's {updates:,} updates"), profiles, strict=False):
        print(f"\ncProfile of one `read_chunk` in this process ({title}):\n")
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
