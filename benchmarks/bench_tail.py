"""Tailing a Tarantool WAL directory: latestOffset cost as the directory grows, and commit-to-row latency.

1. With the real tarantool, writes a WAL directory of about ``--files`` xlogs (``wal_max_size`` below one
   transaction, so nearly every transaction gets its own file), and a second directory holding copies of its
   last 10 files. On both, times ``TarantoolDirStream.latest_offset``:
   - *idle*: from the newest boundary (nothing new), with a fresh stream each call (cold meta cache) and with
     one stream (warm);
   - *one rotation behind*: from the first block of the second newest file (crosses it by the newest file's
     header, then walks the newest file's blocks).
   The cost must not grow with the number of files already passed.
2. Starts a writer committing one transaction every ``--period`` seconds for ``--seconds`` and measures, per
   row, the time from its commit (the row's ``timestamp``) to its arrival:
   - in a Spark ``foreachBatch`` sink with ``trigger(processingTime="1 second")`` (skipped with ``--no-spark``);
   - in the follow loop (what ``spark_logsource.follow`` runs) polling every 0.1 s, in this process.
   Prints p50/p99 of each.

Usage: python3 benchmarks/bench_tail.py [--workdir /tmp/spark-logsource-bench-tail] [--files 1000] [--no-spark]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from local_spark import spark_session  # noqa: E402  (the benchmarks/ folder is sys.path[0])

from spark_logsource.api import make_format  # noqa: E402
from spark_logsource.streaming.stream import ReadBudget  # noqa: E402
from tests.support.tarantool_writer import start_writer  # noqa: E402


def make_dirs(workdir: Path, files: int) -> tuple[Path, Path]:
    big = workdir / f"wal-{files}"
    if not big.exists() or len(list(big.glob("*.xlog"))) < files * 0.9:
        shutil.rmtree(big, ignore_errors=True)
        writer = start_writer(big, total=int(files * 1.3), period=0.002, wait=True, cfg={"wal_max_size": 256})
        writer.finish(timeout=600)
    small = workdir / "wal-10"
    shutil.rmtree(small, ignore_errors=True)
    small.mkdir()
    for p in sorted(big.glob("*.xlog"))[-10:]:
        shutil.copy(p, small / p.name)
    return big, small


def timed(fn, repeat: int) -> float:
    """Median seconds of ``fn()`` over ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def latest_offset_costs(path: Path, repeat: int) -> dict[str, float]:
    def stream():
        return make_format("tarantool-xlog", str(path), {}).stream()

    s = stream()
    head = s.latest_offset(s.initial_offset(), ReadBudget())
    from spark_logsource.tarantool.xlog.meta import read_meta

    before_last = sorted(path.glob("*.xlog"))[-2]
    with open(before_last, "rb") as f:
        meta = read_meta(f, str(before_last))
    # A reader one rotation behind: it crosses the closed file by its successor's header, walks the newest one.
    behind = {**head, "file": before_last.name, "pos": meta.data_offset,
              "vclock": {str(r): lsn for r, lsn in sorted(meta.vclock.items())}}
    warm = stream()
    return {
        "files": len(list(path.glob("*.xlog"))),
        "idle_cold_ms": 1000 * timed(lambda: stream().latest_offset(head, ReadBudget()), repeat),
        "idle_warm_ms": 1000 * timed(lambda: warm.latest_offset(head, ReadBudget()), repeat),
        "behind_ms": 1000 * timed(lambda: warm.latest_offset(behind, ReadBudget()), repeat),
    }


def percentiles(latencies: list[float]) -> str:
    if not latencies:
        return "no rows"
    q = statistics.quantiles(latencies, n=100)
    return f"p50 {1000 * q[49]:.0f} ms, p99 {1000 * q[98]:.0f} ms over {len(latencies)} rows"


def follow_latency(path: Path, stop: threading.Event, out: list[float]) -> None:
    """Rows' commit-to-arrival times through the follow loop (driven here so that ``stop`` ends it)."""
    stream = make_format("tarantool-xlog", str(path), {"startingPosition": "latest"}).stream()
    start = stream.initial_offset()
    while not stop.is_set():
        end = stream.latest_offset(start, ReadBudget())
        if end == start:
            time.sleep(0.1)
            continue
        for piece in stream.plan(start, end):
            for batch in stream.read_slice(piece):
                now = time.time()
                out.extend(now - ts.timestamp() for ts in batch.column("timestamp").to_pylist() if ts is not None)
        start = end


def spark_latency(spark, path: Path, workdir: Path, seconds: float) -> list[float]:
    out: list[float] = []
    started = threading.Event()

    def sink(df, batch_id):
        now = time.time()
        if started.is_set():  # the first batches include the query's start-up
            out.extend(now - r[0].timestamp() for r in df.select("timestamp").collect() if r[0] is not None)
        started.set()

    ck = workdir / "latency-checkpoint"
    shutil.rmtree(ck, ignore_errors=True)
    q = (spark.readStream.format("tarantool-xlog").option("startingPosition", "latest").load(str(path))
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(ck))
         .trigger(processingTime="1 second").start())
    started.wait(120)
    time.sleep(seconds)
    q.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench-tail"))
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--period", type=float, default=0.02)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)

    big, small = make_dirs(args.workdir, args.files)
    print("| xlogs in directory | idle, cold (ms) | idle, warm (ms) | one rotation behind (ms) |")
    print("| ---: | ---: | ---: | ---: |")
    for path in (small, big):
        c = latest_offset_costs(path, args.repeat)
        print(f"| {c['files']} | {c['idle_cold_ms']:.2f} | {c['idle_warm_ms']:.2f} | {c['behind_ms']:.2f} |")

    spark = None if args.no_spark else spark_session()
    live = args.workdir / "live"
    shutil.rmtree(live, ignore_errors=True)
    writer = start_writer(live, total=1_000_000, period=args.period, cfg={"wal_max_size": 1 << 20})
    writer.wait_for_xlog()
    stop = threading.Event()
    result: dict[str, list[float]] = {"follow": []}
    follower = threading.Thread(target=follow_latency, args=(live, stop, result["follow"]), daemon=True)
    follower.start()
    if spark is not None:
        result["spark"] = spark_latency(spark, live, args.workdir, args.seconds)
        spark.stop()
    else:
        time.sleep(args.seconds)
    stop.set()
    follower.join(timeout=30)
    writer.proc.kill()
    writer.proc.communicate()
    print()
    print("| reader | commit-to-row latency |")
    print("| --- | --- |")
    if "spark" in result:
        print(f"| Spark foreachBatch, processingTime 1 s | {percentiles(result['spark'])} |")
    print(f"| follow loop, poll 0.1 s | {percentiles(result['follow'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
