"""Tarantool xlog reading speed, CPU and memory against Tarantool's own ``xlog.pairs()``.

Makes, with the real tarantool (cached in ``--workdir``), xlogs of three workloads (zstd blocks, as Tarantool
writes them by default):

- ``base``: ``--rows`` rows (default 1M) of ``{i, 'name i', i * 1.5, i % 3 == 0, {a = i, b = 'x'}}``,
  1000 rows per transaction, plus the same workload 10× larger (``--big-factor``) for the memory check;
- ``wide``: ``--wide-rows`` rows (default 200k) of 50 fields: the id, 40 short texts and 9 JSON-like maps
  ``{id = i, tag = 'tag k', vals = {k, i, 3}, ok = true}``, 100 rows per transaction;
- ``narrow``: ``--rows`` rows of 2 integer fields ``{i, i * 7}``, 1000 rows per transaction.

Then, ``--repeat`` times (default 3), side by side in one run: ``xlog.pairs()`` in a Lua loop touching
``HEADER.lsn`` and ``BODY.tuple`` of every row, and ``spark_logsource.iter_batches`` over the same file with
``tupleFormat=msgpack`` and with the default (Variant), each with its wall time and CPU seconds (the child's for
tarantool, this process's for iter_batches); the ratios (rows/s over xlog.pairs()'s in the same repetition) are
reported as medians.  With Spark (not ``--no-spark``), the base xlog is read by ``local[2]`` into the ``noop``
sink as one split and as ``--splits`` splits (``maxPartitionBytes``), CPU = the JVM and its Python workers (the
process tree under the JVM) plus the driver.  Last, the peak RSS of iter_batches (a child process) over the base
xlog and over the 10× one.  Ends with a markdown snippet for benchmarks/README.md.

Usage: python3 benchmarks/bench_tarantool.py [--workdir /tmp/spark-logsource-bench] [--rows 1000000] [--no-spark]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from local_spark import jvm_pid, process_tree_cpu  # noqa: E402  (the benchmarks/ folder is sys.path[0])
from peak_rss import peak_rss_kib  # noqa: E402

log = logging.getLogger("bench_tarantool")

CFG_LUA = """
box.cfg{{listen = '127.0.0.1:0', wal_dir = '{dir}', memtx_dir = '{dir}', vinyl_dir = '{dir}', work_dir = '{dir}',
    log = '{dir}/tarantool.log', wal_max_size = 64 * 1024 * 1024 * 1024, memtx_memory = 8 * 1024 * 1024 * 1024,
    checkpoint_count = 10}}
local s = box.schema.space.create('bench')
s:create_index('pk')
local rows, batch = {rows}, {per_txn}
local function row(i)
{row}
end
for first = 1, rows, batch do
    box.begin()
    for i = first, math.min(first + batch - 1, rows) do s:insert(row(i)) end
    box.commit()
end
os.exit(0)
"""

WORKLOADS: dict[str, tuple[str, int, str]] = {
    # name: (Lua body of row(i), rows per transaction, description for the README)
    "base": ("    return {i, 'name ' .. i, i * 1.5, i % 3 == 0, {a = i, b = 'x'}}", 1000,
             "`{i, 'name i', i * 1.5, i % 3 == 0, {a = i, b = 'x'}}`, 1000 rows per transaction"),
    "wide": ("""    local t = {i}
    for k = 2, 50 do
        if k % 5 == 0 then t[k] = {id = i, tag = 'tag ' .. k, vals = {k, i, 3}, ok = true}
        else t[k] = 'text ' .. k .. ' of row ' .. i end
    end
    return t""", 100,
             "50 fields: the id, 40 texts `'text k of row i'`, 9 maps `{id = i, tag = 'tag k', vals = {k, i, 3}, "
             "ok = true}`; 100 rows per transaction"),
    "narrow": ("    return {i, i * 7}", 1000, "2 integer fields `{i, i * 7}`, 1000 rows per transaction"),
}

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



@dataclass
class Run:
    """One timed read: rows, wall seconds, CPU seconds."""

    rows: int
    wall: float
    cpu: float


@dataclass
class Series:
    """Repeated runs of one reader on one file, and its ratios to xlog.pairs() of the same repetitions."""

    name: str
    runs: list[Run] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)

    def median(self, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in self.runs)

    @property
    def rate(self) -> float:
        return statistics.median(r.rows / r.wall for r in self.runs)

    @property
    def cpu_per_million(self) -> float:
        return statistics.median(r.cpu / r.rows * 1e6 for r in self.runs)


def make_data(workdir: Path, name: str, rows: int) -> Path:
    """The largest xlog of a directory where the real tarantool ran workload ``name`` for ``rows`` rows (cached)."""
    directory = workdir / f"{name}-{rows}"
    done = directory / "DONE"
    if not done.exists():
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*"):
            if old.is_file():
                old.unlink()
        body, per_txn, _ = WORKLOADS[name]
        script = directory / "make.lua"
        script.write_text(CFG_LUA.format(dir=directory, rows=rows, per_txn=per_txn, row=body))
        log.info("making %s rows of %s with tarantool in %s", rows, name, directory)
        started = time.perf_counter()
        subprocess.run(["tarantool", str(script)], cwd=directory, check=True, timeout=3600)
        log.info("made in %.1f s", time.perf_counter() - started)
        done.write_text("ok\n")
    return max(directory.glob("*.xlog"), key=lambda p: p.stat().st_size)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pairs_run(path: Path, workdir: Path) -> Run:
    script = workdir / "pairs.lua"
    script.write_text(PAIRS_LUA)
    cpu0, started = children_cpu(), time.perf_counter()
    out = subprocess.run(["tarantool", str(script), str(path)], check=True, capture_output=True, text=True)
    return Run(int(out.stdout.split()[-1]), time.perf_counter() - started, children_cpu() - cpu0)


def iter_batches_run(path: Path, tuple_format: str | None) -> Run:
    import spark_logsource

    options = {"tupleFormat": tuple_format} if tuple_format else {}
    cpu0, started = time.process_time(), time.perf_counter()
    rows = sum(batch.num_rows for batch in spark_logsource.iter_batches("tarantool-xlog", str(path), **options))
    return Run(rows, time.perf_counter() - started, time.process_time() - cpu0)


def spark_run(spark: object, path: Path, rows: int, split_bytes: int | None) -> Run:
    jvm = jvm_pid(spark)
    reader = spark.read.format("tarantool-xlog")  # type: ignore[attr-defined]
    if split_bytes:
        reader = reader.option("maxPartitionBytes", str(split_bytes))
    cpu0, own0, started = process_tree_cpu(jvm), time.process_time(), time.perf_counter()
    reader.load(str(path)).write.format("noop").mode("overwrite").save()
    wall = time.perf_counter() - started
    return Run(rows, wall, process_tree_cpu(jvm) - cpu0 + time.process_time() - own0)


def compare(label: str, path: Path, workdir: Path, repeat: int,
            others: dict[str, Callable[[], Run]]) -> list[Series]:
    """xlog.pairs() and each reader of ``others``, side by side, ``repeat`` times; ratios per repetition."""
    pairs = Series("xlog.pairs()")
    series = {name: Series(name) for name in others}
    for rep in range(repeat):
        base = pairs_run(path, workdir)
        pairs.runs.append(base)
        pairs.ratios.append(1.0)
        for name, fn in others.items():
            run = fn()
            if run.rows != base.rows:
                raise SystemExit(f"{label} {name}: {run.rows} rows, xlog.pairs() {base.rows}")
            series[name].runs.append(run)
            series[name].ratios.append((run.rows / run.wall) / (base.rows / base.wall))
            log.info("%s rep %d %s: %.2f s wall, %.2f s CPU; xlog.pairs %.2f s wall, %.2f s CPU: %.2f×", label, rep,
                     name, run.wall, run.cpu, base.wall, base.cpu, series[name].ratios[-1])
    return [*series.values(), pairs]


def table(label: str, path: Path, description: str, series: list[Series]) -> list[str]:
    rows = series[-1].runs[0].rows
    lines = [f"**{label}**: `{path.name}`, {rows:,} rows, {path.stat().st_size / 1e6:.0f} MB zstd; {description}", "",
             "| reader | rows/s (median) | × xlog.pairs() (median; each run) | CPU s per 1M rows |",
             "|---|---:|---:|---:|"]
    for s in series:
        each = ", ".join(f"{r:.2f}" for r in s.ratios)
        lines.append(f"| {s.name} | {s.rate:,.0f} | {statistics.median(s.ratios):.2f} ({each}) | "
                     f"{s.cpu_per_million:.2f} |")
    lines.append("")
    return lines


def flush(lines: list[str]) -> list[str]:
    """Print the markdown so far (a later failure loses nothing); an empty list to go on with."""
    print("\n".join(lines), flush=True)
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--wide-rows", type=int, default=200_000)
    parser.add_argument("--big-factor", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--splits", type=int, default=4, help="splits of the base xlog in the Spark run")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--workloads", default="base,wide,narrow")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args.workdir.mkdir(parents=True, exist_ok=True)

    sizes = {"base": args.rows, "wide": args.wide_rows, "narrow": args.rows}
    files = {name: make_data(args.workdir, name, sizes[name]) for name in args.workloads.split(",")}
    print("<!-- markdown for benchmarks/README.md -->", flush=True)
    lines = [f"Tarantool {subprocess.run(['tarantool', '--version'], capture_output=True, text=True).stdout.split()[1]}"
             f", {os.cpu_count()} cores, load average before the run {os.getloadavg()[0]:.1f}; command: "
             f"`python3 benchmarks/bench_tarantool.py --rows {args.rows} --wide-rows {args.wide_rows} "
             f"--repeat {args.repeat}`", ""]
    for name, path in files.items():
        readers = {
            "iter_batches tupleFormat=msgpack": lambda p=path: iter_batches_run(p, "msgpack"),
            "iter_batches (default: variant)": lambda p=path: iter_batches_run(p, None),
        }
        lines += table(name, path, WORKLOADS[name][2], compare(name, path, args.workdir, args.repeat, readers))
        lines = flush(lines)

    if not args.no_spark and "base" in files:
        from pyspark.sql import SparkSession

        # Spark's Python workers run this interpreter (with pyarrow and spark_logsource), not whatever is on PATH
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

        import spark_logsource

        spark = (SparkSession.builder.master("local[2]").appName("bench-tarantool")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g").getOrCreate())
        spark_logsource.register(spark)
        path = files["base"]
        rows = pairs_run(path, args.workdir).rows
        split_bytes = path.stat().st_size // args.splits + 1
        spark_run(spark, path, rows, split_bytes)  # warm-up (JVM, Python workers)
        readers = {
            "Spark local[2] → noop, 1 split": lambda: spark_run(spark, path, rows, None),
            f"Spark local[2] → noop, {args.splits} splits": lambda: spark_run(spark, path, rows, split_bytes),
        }
        lines += table("base, Spark", path, WORKLOADS["base"][2] + "; CPU = JVM + Python workers + driver",
                       compare("spark", path, args.workdir, args.repeat, readers))
        lines = flush(lines)
        spark.stop()

    if not args.no_rss and "base" in files:
        big = make_data(args.workdir, "base", args.rows * args.big_factor)
        small_rows, small_rss = peak_rss_kib("tarantool-xlog", files["base"])
        big_rows, big_rss = peak_rss_kib("tarantool-xlog", big)
        lines += ["| peak RSS, iter_batches (variant) | rows | KiB |", "|---|---:|---:|",
                  f"| {files['base'].name} | {small_rows:,} | {small_rss:,} |",
                  f"| {big.name} ({args.big_factor}×) | {big_rows:,} | {big_rss:,} |",
                  f"| growth | | {100.0 * (big_rss - small_rss) / small_rss:+.1f}% |", ""]
    flush(lines)


if __name__ == "__main__":
    main()
