"""Tarantool xlog/snap reading speed and memory (issue #2, "Speed and memory").

Makes, with the real tarantool (cached in ``--workdir``), an xlog and a snap of ``--rows`` rows (default 1M)
and an xlog 10× larger, then prints in one run rows/s of:

- ``spark_logsource.iter_batches`` in this process, ``tupleFormat=msgpack`` and the default (variant);
- a Spark ``local[2]`` read written to the ``noop`` sink;
- Tarantool's ``xlog.pairs()`` in a Lua loop that touches ``header.lsn`` and the body of every row;
- ``tarantoolctl cat --format=json`` to /dev/null (on at most ``--cat-rows`` rows: it is slow);

with the ratios to xlog.pairs(), and the peak RSS (``resource.getrusage`` in a child process) of iter_batches
over the xlog and over the 10× one. Ends with a markdown snippet for the README.

Usage: python3 benchmarks/bench_tarantool.py [--workdir /tmp/spark-logsource-bench] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

log = logging.getLogger("bench_tarantool")

MAKE_DATA_LUA = """
box.cfg{{listen = '127.0.0.1:0', wal_dir = '{dir}', memtx_dir = '{dir}', vinyl_dir = '{dir}', work_dir = '{dir}',
    log = '{dir}/tarantool.log', wal_max_size = 64 * 1024 * 1024 * 1024, memtx_memory = 8 * 1024 * 1024 * 1024,
    checkpoint_count = 10}}
local s = box.schema.space.create('bench')
s:create_index('pk')
local rows, batch = {rows}, 1000
for first = 1, rows, batch do
    box.begin()
    for i = first, math.min(first + batch - 1, rows) do
        s:insert{{i, 'name ' .. i, i * 1.5, i % 3 == 0, {{a = i, b = 'x'}}}}
    end
    box.commit()
end
{snapshot}
os.exit(0)
"""

PAIRS_LUA = """
local xlog = require('xlog')
local n, sum = 0, 0
for _, row in xlog.pairs(arg[1]) do
    local lsn = row.HEADER.lsn
    if lsn ~= nil then sum = sum + lsn end
    if row.BODY ~= nil and row.BODY.tuple ~= nil then n = n + 1 end
end
io.stdout:write(n, '\\n')
os.exit(0)
"""

RSS_CHILD = """
import resource, sys
sys.path.insert(0, sys.argv[2])
import spark_logsource
n = 0
for batch in spark_logsource.iter_batches("tarantool-xlog", sys.argv[1], tupleFormat=sys.argv[3]):
    n += batch.num_rows
print(n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@dataclass
class Measure:
    name: str
    rows: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds else float("nan")


def make_data(workdir: Path, name: str, rows: int, snapshot: bool) -> Path:
    """A directory where the real tarantool inserted ``rows`` rows (1000 per transaction), cached."""
    directory = workdir / f"{name}-{rows}"
    done = directory / "DONE"
    if done.exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*"):
        if old.is_file():
            old.unlink()
    script = directory / "make.lua"
    script.write_text(MAKE_DATA_LUA.format(dir=directory, rows=rows, snapshot="box.snapshot()" if snapshot else ""))
    log.info("making %s rows with tarantool in %s", rows, directory)
    started = time.perf_counter()
    subprocess.run(["tarantool", str(script)], cwd=directory, check=True, timeout=3600)
    log.info("made in %.1f s", time.perf_counter() - started)
    done.write_text("ok\n")
    return directory


def largest(directory: Path, suffix: str) -> Path:
    return max(directory.glob(f"*{suffix}"), key=lambda p: p.stat().st_size)


def timed(name: str, fn: Callable[[], int]) -> Measure:
    started = time.perf_counter()
    rows = fn()
    elapsed = time.perf_counter() - started
    log.info("%s: %d rows in %.2f s", name, rows, elapsed)
    return Measure(name, rows, elapsed)


def iter_batches_rows(path: Path, tuple_format: str | None) -> int:
    import spark_logsource

    options = {"tupleFormat": tuple_format} if tuple_format else {}
    return sum(batch.num_rows for batch in spark_logsource.iter_batches("tarantool-xlog", str(path), **options))


def spark_noop_rows(spark: object, path: Path, rows: int) -> int:
    spark.read.format("tarantool-xlog").load(str(path)).write.format("noop").mode("overwrite").save()  # type: ignore[attr-defined]
    return rows


def pairs_rows(path: Path, workdir: Path) -> int:
    script = workdir / "pairs.lua"
    script.write_text(PAIRS_LUA)
    out = subprocess.run(["tarantool", str(script), str(path)], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def cat_rows(path: Path, cap: int) -> int:
    """tarantoolctl cat --format=json of the first ``cap`` rows (its --to bound stops it there)."""
    with open(os.devnull, "w") as sink:
        subprocess.run(["tarantoolctl", "cat", str(path), "--format=json", f"--to={cap + 1}"], check=True,
                       stdout=sink, stderr=subprocess.DEVNULL)
    return cap


def peak_rss_kib(path: Path, tuple_format: str) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", RSS_CHILD, str(path), str(REPO), tuple_format], check=True,
                         capture_output=True, text=True)
    rows, rss = out.stdout.split()
    return int(rows), int(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big-factor", type=int, default=10)
    parser.add_argument("--cat-rows", type=int, default=100_000, help="rows tarantoolctl cat is timed on")
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args.workdir.mkdir(parents=True, exist_ok=True)

    base = make_data(args.workdir, "base", args.rows, snapshot=True)
    big = make_data(args.workdir, "big", args.rows * args.big_factor, snapshot=False)
    xlog, snap, big_xlog = largest(base, ".xlog"), largest(base, ".snap"), largest(big, ".xlog")

    spark = None
    if not args.no_spark:
        from pyspark.sql import SparkSession

        import spark_logsource

        spark = (SparkSession.builder.master("local[2]").appName("bench-tarantool")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g").getOrCreate())
        spark_logsource.register(spark)

    results: dict[str, list[Measure]] = {}
    for label, path in (("xlog", xlog), ("snap", snap)):
        pairs = timed("xlog.pairs()", lambda p=path: pairs_rows(p, args.workdir))
        rows = pairs.rows
        measures = [
            timed("iter_batches tupleFormat=msgpack", lambda p=path: iter_batches_rows(p, "msgpack")),
            timed("iter_batches (default: variant)", lambda p=path: iter_batches_rows(p, None)),
        ]
        if spark is not None:
            spark_noop_rows(spark, path, rows)  # warm-up (JVM, Python workers)
            measures.append(timed("Spark local[2] -> noop", lambda p=path, r=rows: spark_noop_rows(spark, p, r)))
        measures.append(pairs)
        measures.append(timed(f"tarantoolctl cat --format=json (first {args.cat_rows} rows)",
                              lambda p=path, r=rows: cat_rows(p, min(args.cat_rows, r))))
        results[label] = measures
    if spark is not None:
        spark.stop()

    small_rows, small_rss = peak_rss_kib(xlog, "variant")
    big_rows, big_rss = peak_rss_kib(big_xlog, "variant")
    growth = 100.0 * (big_rss - small_rss) / small_rss

    lines = [f"Tarantool {subprocess.run(['tarantool', '--version'], capture_output=True, text=True).stdout.split()[1]}"
             f", {os.cpu_count()} cores; command: python3 benchmarks/bench_tarantool.py --rows {args.rows}", ""]
    for label, measures in results.items():
        pairs_rate = next(m.rate for m in measures if m.name == "xlog.pairs()")
        path = xlog if label == "xlog" else snap
        lines.append(f"{label}: {path.name}, {measures[-2].rows:,} rows, {path.stat().st_size / 1e6:.0f} MB")
        lines.append("")
        lines.append("| reader | rows/s | × xlog.pairs() |")
        lines.append("|---|---:|---:|")
        for m in measures:
            lines.append(f"| {m.name} | {m.rate:,.0f} | {m.rate / pairs_rate:.2f} |")
        lines.append("")
    lines.append("| peak RSS, iter_batches (variant) | rows | KiB |")
    lines.append("|---|---:|---:|")
    lines.append(f"| {xlog.name} | {small_rows:,} | {small_rss:,} |")
    lines.append(f"| {big_xlog.name} ({args.big_factor}×) | {big_rows:,} | {big_rss:,} |")
    lines.append(f"| growth | | {growth:+.1f}% |")
    print("<!-- markdown for the README -->")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
