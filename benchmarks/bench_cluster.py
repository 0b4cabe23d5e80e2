"""Benchmark: Spark on a standalone cluster of two one-core workers (issue #25, "Measure").

Starts the cluster of ``tests/support/servers/spark_standalone.py`` (a master and two workers from the pyspark
package's ``spark-class``, on loopback, each worker one core and ``--memory``), then, in one run, reads to the
``noop`` sink a MariaDB binlog (``bench_mysql.py``'s workload, made by the real server and kept in ``--workdir``)
and a Tarantool xlog (``bench_tarantool.py``'s base workload), each cut into ``--splits`` splits
(``maxPartitionBytes``), with three sessions one after the other:

* ``cluster, 1 worker``: an application limited to one core (``spark.cores.max=1``: one executor);
* ``cluster, 2 workers``: two cores, an executor on each worker;
* ``local[2]``: the suite's session, for the CPU comparison.

The two cluster applications alternate, one per repetition each (1 then 2 workers, then 2 then 1, ...), each
warmed by one untimed read of both files.

Per read: rows/s (wall clock, the session and its executors up and warmed by one untimed read) and CPU seconds per
million rows: the executors' JVMs with their Python workers (the workers' process trees), the driver's JVM and this
process; for ``local[2]`` the JVM's tree and this process. The scaling ratio is the 2-worker rate over the 1-worker
rate; on a 2-core machine whatever else runs takes from the second core, and one one-core executor already keeps
more than one core busy (its Python worker decodes while its JVM takes the previous batch), so the ratio says what
the split of work gives here, not what a cluster of real machines would. "cores busy" is CPU seconds per wall
second of the read.

    python3 benchmarks/bench_cluster.py [--workdir /tmp/spark-logsource-bench] [--xlog-rows 1000000]
        [--binlog-rows 500000] [--splits 8] [--repeat 3] [--memory 1g]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_mysql import prepare
from bench_tarantool import make_data
from local_spark import jvm_pid, process_tree_cpu, spark_session

from tests.support.servers.spark_standalone import StandaloneCluster, wait_for_executors

log = logging.getLogger("bench_cluster")


@dataclass
class Series:
    """The runs of one read with one session: (rows, wall seconds, CPU seconds) each."""

    runs: list[tuple[int, float, float]] = field(default_factory=list)

    def rate(self) -> float:
        return statistics.median(rows / wall for rows, wall, _ in self.runs)

    def cpu_per_million(self) -> float:
        return statistics.median(cpu / rows * 1e6 for rows, _, cpu in self.runs)

    def cores_busy(self) -> float:
        """CPU seconds per wall second: how many cores the read kept busy."""
        return statistics.median(cpu / wall for _, wall, cpu in self.runs)


def noop_read(spark: Any, fmt: str, path: Path, split_bytes: int, options: dict[str, str]) -> None:
    reader = spark.read.format(fmt).option("maxPartitionBytes", str(split_bytes))
    for key, value in options.items():
        reader = reader.option(key, value)
    reader.load(str(path)).write.format("noop").mode("overwrite").save()


def timed(spark: Any, cpu: Callable[[], float], read: Callable[[], None], rows: int) -> tuple[int, float, float]:
    cpu0, started = cpu(), time.perf_counter()
    read()
    return rows, time.perf_counter() - started, cpu() - cpu0


def run_session(label: str, spark: Any, cpu: Callable[[], float], reads: dict[str, tuple[Callable[[], None], int]],
                repeat: int, results: dict[tuple[str, str], Series]) -> None:
    for read, _ in reads.values():
        read()  # warm-up: Python workers started, files in the page cache
    for _ in range(repeat):
        for name, (read, rows) in reads.items():
            results.setdefault((name, label), Series()).runs.append(timed(spark, cpu, read, rows))
            log.info("%s %s: %.0f rows/s", label, name, results[(name, label)].runs[-1][0]
                     / results[(name, label)].runs[-1][1])


def count_rows(fmt: str, path: Path, options: dict[str, str]) -> int:
    import spark_logsource

    return sum(b.num_rows for b in spark_logsource.iter_batches(fmt, str(path), **options))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "spark-logsource-bench")
    parser.add_argument("--xlog-rows", type=int, default=1_000_000)
    parser.add_argument("--binlog-rows", type=int, default=500_000)
    parser.add_argument("--splits", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", default="1g", help="each worker's and executor's memory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    xlog = make_data(args.workdir, "base", args.xlog_rows)
    server, workload = prepare(args.workdir / "mysql", args.binlog_rows, 1000)
    binlog = server.binlog_dir / workload.binlog
    server.stop()  # the file is read, not the server
    files = {"binlog": ("mysql-binlog", binlog, {}), "xlog": ("tarantool-xlog", xlog, {})}
    rows = {name: count_rows(fmt, path, opts) for name, (fmt, path, opts) in files.items()}

    def reads_for(spark: Any) -> dict[str, tuple[Callable[[], None], int]]:
        return {name: (lambda f=fmt, p=path, o=opts: noop_read(spark, f, p, p.stat().st_size // args.splits + 1, o),
                       rows[name]) for name, (fmt, path, opts) in files.items()}

    results: dict[tuple[str, str], Series] = {}
    cluster = StandaloneCluster(args.workdir / "standalone", workers=2, cores=1, memory=args.memory).start()
    try:
        # one application at a time, 1 and 2 workers alternating (1 2, 2 1, 1 2, ...) so that the machine's load,
        # which drifts, weighs on both alike; a ratio is taken within one repetition
        for rep in range(args.repeat):
            for workers in (1, 2) if rep % 2 == 0 else (2, 1):
                label = f"cluster, {workers} worker{'s' if workers > 1 else ''}"
                spark = (cluster.session_builder(f"bench-{workers}").config("spark.cores.max", str(workers))
                         .getOrCreate())
                spark.sparkContext.setLogLevel("ERROR")
                wait_for_executors(spark, workers)
                driver = jvm_pid(spark)

                def cpu(driver: int = driver) -> float:
                    return (sum(process_tree_cpu(w) for w in cluster.worker_pids()) + process_tree_cpu(driver)
                            + time.process_time())

                run_session(label, spark, cpu, reads_for(spark), 1, results)
                spark.stop()
    finally:
        cluster.stop()
    spark = spark_session()
    local_jvm = jvm_pid(spark)
    run_session("local[2]", spark, lambda: process_tree_cpu(local_jvm) + time.process_time(), reads_for(spark),
                args.repeat, results)
    spark.stop()

    load = os.getloadavg()[0]
    print(f"\n{os.cpu_count()} cores (the two workers share them with the driver and whatever else runs), load "
          f"average {load:.1f} at the end; {args.splits} splits, {args.repeat} runs each, medians\n")
    print("| file | rows | session | rows/s | CPU s per 1M rows | cores busy |")
    print("|---|---:|---|---:|---:|---:|")
    for name, (_, path, _) in files.items():
        for label in ("cluster, 1 worker", "cluster, 2 workers", "local[2]"):
            s = results[(name, label)]
            print(f"| {name} `{path.name}` | {rows[name]:,} | {label} | {s.rate():,.0f} | {s.cpu_per_million():.2f} "
                  f"| {s.cores_busy():.2f} |")
    print("\n| file | scaling: 2 workers / 1 worker (each run) | CPU per row: cluster 2 workers / local[2] |")
    print("|---|---:|---:|")
    for name in files:
        one, two, local = (results[(name, label)] for label in ("cluster, 1 worker", "cluster, 2 workers",
                                                                  "local[2]"))
        each = ", ".join(f"{(r2 / w2) / (r1 / w1):.2f}" for (r1, w1, _), (r2, w2, _) in zip(one.runs, two.runs,
                                                                                            strict=True))
        cpu_ratio = two.cpu_per_million() / local.cpu_per_million()
        print(f"| {name} | {two.rate() / one.rate():.2f} ({each}) | {cpu_ratio:.2f} |")


if __name__ == "__main__":
    main()
