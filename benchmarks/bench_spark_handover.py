"""Benchmark: Spark's side of a read through our sources, shape by shape, against Spark's own Parquet reader.

For each output shape of the same rows (docs/spark-speed.md), three Spark ``local[2]`` reads into the ``noop``
sink, best of ``--repeat`` after ``--warmup`` unmeasured rounds (1 unless set), side by side in each repetition:

* ``source``: our data source (``spark.read.format(...)``), decoding included, ``--splits`` splits;
* ``handover``: the same batches decoded beforehand into an Arrow IPC file that a tiny data source of this script
  memory-maps and yields, one share per task: the Python worker only hands batches over, so what is measured is
  Spark's cost for a Python data source (the Arrow stream to the JVM, its conversion into rows);
* ``columnar``: our source through the columnar JVM reader (``read_columnar``, ``jars/arrow-pipe``), decoding
  included, ``--splits`` splits: each task's batches go to Spark as columnar batches, not rows, and a projection
  is cut before the batches leave the Python worker (only when the jar is built: ``jars/arrow-pipe/build.sh``);
* ``parquet``: the same rows written once by Spark (``handover`` → ``write.parquet``, uncompressed, one file per
  split) and read back by ``spark.read.parquet``, one task per file: Spark without a Python worker.

Shapes: ``xlog`` (the Tarantool xlog's default view, four Variant columns), ``xlog-msgpack`` (``tupleFormat=
msgpack``: binary columns), ``xlog-ints`` (a flat projection of the xlog's seven integer columns; ``source``
still decodes and ships every column: a Python data source has no column pruning), ``binlog`` (the MariaDB
binlog's ``changes`` view, two Variant columns), ``binlog-table`` (``view=table``: nested typed structs).

``--jfr DIR`` records three more (untimed) runs of each read with Java Flight Recorder (``jcmd JFR.start``/
``JFR.stop`` around them) and prints the executor threads' hottest frames; ``--py-spy DIR`` samples the Python
workers of those runs with py-spy (``pip install py-spy``, the ``bench`` extra). ``--conf k=v`` sets a Spark setting
at the session's start (e.g. ``spark.driver.extraJavaOptions``); ``--batch-rows N`` sets the rows per batch of every
read (``batchSize``; by default 32768, as the recorded figures; our reads' own default is 8192); ``--rebatch N,N``
adds the source and the hand-over with N-row batches, side by side with the others.

    PYSPARK_PYTHON=$PWD/.venv/bin/python PYSPARK_DRIVER_PYTHON=$PWD/.venv/bin/python \\
    .venv/bin/python benchmarks/bench_spark_handover.py [--workdir /tmp/spark-logsource-bench-handover] \\
        [--xlog FILE] [--binlog FILE] [--shapes xlog,xlog-msgpack,xlog-ints,binlog,binlog-table] [--splits 2] \\
        [--repeat 3] [--batch-rows N] [--rebatch N,N] [--conf k=v ...] [--jfr DIR] [--py-spy DIR] \\
        [--only source,handover,columnar,parquet]
"""

from __future__ import annotations

import argparse
import collections
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from local_spark import cpu_seconds, jvm_pid, process_tree_cpu, register_prebuilt  # benchmarks/ is sys.path[0]

from spark_logsource.spark.columnar import arrow_pipe_jar

log = logging.getLogger("bench_spark_handover")

XLOG_INTS = ["offset", "lsn", "replica_id", "tsn", "group_id", "space_id", "index_id"]
READS = ("source", "handover", "columnar", "parquet")


@dataclass
class Shape:
    name: str
    fmt: str
    path: Path
    options: dict[str, str]
    columns: list[str] | None = None  # a projection (None: every column)


@dataclass
class Result:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    jvm: list[float] = field(default_factory=list)  # of cpu: the JVM's own threads (the rest: Python processes)


#: rows per batch of every read unless ``--batch-rows`` says otherwise: the size of the recorded figures
BENCH_BATCH_ROWS = 32768

def shapes(xlog: Path, binlog: Path, table: str) -> dict[str, Shape]:
    return {s.name: s for s in [
        Shape("xlog", "tarantool-xlog", xlog, {}),
        Shape("xlog-msgpack", "tarantool-xlog", xlog, {"tupleFormat": "msgpack"}),
        Shape("xlog-ints", "tarantool-xlog", xlog, {}, XLOG_INTS),
        Shape("binlog", "mysql-binlog", binlog, {}),
        Shape("binlog-table", "mysql-binlog", binlog, {"view": "table", "table": table}),
    ]}


def default_files(workdir: Path) -> tuple[Path, Path, str]:
    """The xlog of bench_tarantool.py's base workload and bench_mysql.py's base binlog, made on first use."""
    import bench_mysql
    import bench_tarantool

    xlog = bench_tarantool.make_data(workdir, "base", 1_000_000)
    server, workload = bench_mysql.prepare(workdir / "mysql", 500_000, bench_mysql.DEFAULT_INSERT_ROWS_PER_STATEMENT)
    binlog = Path(server.binlog_dir) / workload.binlog
    server.stop()
    return xlog, binlog, bench_mysql.TABLE


# -- the three reads -------------------------------------------------------------------------------------------
def batch_options(shape: Shape, batch_rows: int | None) -> dict[str, str]:
    return {**shape.options, **({"batchSize": str(batch_rows)} if batch_rows else {})}


def prebuilt_file(shape: Shape, workdir: Path, batch_rows: int | None) -> Path:
    """The shape's batches, decoded once into an Arrow IPC file (cached)."""
    import pyarrow as pa

    import spark_logsource

    where = workdir / f"{shape.name}-{batch_rows or 'default'}.arrow"
    if not where.exists():
        tmp = where.with_suffix(".tmp")
        batches = spark_logsource.iter_batches(shape.fmt, str(shape.path), **batch_options(shape, batch_rows))
        first = next(batches)
        if shape.columns:
            first = first.select(shape.columns)
        with pa.ipc.new_file(str(tmp), first.schema) as writer:
            writer.write_batch(first)
            for batch in batches:
                writer.write_batch(batch.select(shape.columns) if shape.columns else batch)
        tmp.rename(where)
    return where


def rebatched_file(arrow: Path, rows: int) -> Path:
    """The batches of ``arrow`` cut again into batches of ``rows`` rows (cached)."""
    import pyarrow as pa

    where = arrow.with_name(f"{arrow.stem}-rebatched-{rows}.arrow")
    if not where.exists():
        reader = pa.ipc.open_file(pa.memory_map(str(arrow)))
        table = reader.read_all().combine_chunks()
        tmp = where.with_suffix(".tmp")
        with pa.ipc.new_file(str(tmp), table.schema) as writer:
            for batch in table.to_batches(max_chunksize=rows):
                writer.write_batch(batch)
        tmp.rename(where)
    return where


def reads(spark, shape: Shape, workdir: Path, splits: int, batch_rows: int | None,  # type: ignore[no-untyped-def]
          rebatch: list[int]) -> dict[str, Callable[[], None]]:
    """The timed reads of ``shape`` (the three, and ``handover-N`` for each N of ``rebatch``: the hand-over of the
    same rows in batches of N rows), after writing (once) what they need."""
    arrow = prebuilt_file(shape, workdir, batch_rows)
    parquet_dir = workdir / f"{shape.name}-{batch_rows or 'default'}-{splits}.parquet"
    if not parquet_dir.exists():
        tmp = parquet_dir.with_name(parquet_dir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        # written by Spark, one task per split, so one file per split
        spark.read.format("bench-prebuilt").option("path", str(arrow)).load().write \
            .option("compression", "none").parquet(str(tmp))
        tmp.rename(parquet_dir)
    split_bytes = shape.path.stat().st_size // splits + 1

    def source(rows: int | None = batch_rows) -> None:
        df = spark.read.format(shape.fmt).options(**batch_options(shape, rows)) \
            .option("maxPartitionBytes", str(split_bytes)).load(str(shape.path))
        (df.select(*shape.columns) if shape.columns else df).write.format("noop").mode("overwrite").save()

    def columnar() -> None:
        from spark_logsource.spark.columnar import read_columnar

        df = read_columnar(spark, shape.fmt, str(shape.path), **batch_options(shape, batch_rows),
                           maxPartitionBytes=str(split_bytes))
        (df.select(*shape.columns) if shape.columns else df).write.format("noop").mode("overwrite").save()

    def handover(where: Path = arrow) -> None:
        spark.read.format("bench-prebuilt").option("path", str(where)).load().write.format("noop") \
            .mode("overwrite").save()

    def parquet() -> None:
        spark.read.option("maxPartitionBytes", str(1 << 40)).parquet(str(parquet_dir)).write.format("noop") \
            .mode("overwrite").save()

    runs = {"source": source, "handover": handover, "columnar": columnar, "parquet": parquet}
    for rows in rebatch:
        runs[f"handover-{rows}"] = functools.partial(handover, rebatched_file(arrow, rows))
        runs[f"source-{rows}"] = functools.partial(source, rows)
    return runs


# -- profiles ---------------------------------------------------------------------------------------------------
FRAME = re.compile(r"^\s+([\w$.<>/]+)\(")


def jfr_top(recording: Path, since: str, top: int = 25) -> list[str]:
    """The executor task threads' CPU samples in ``recording`` from time of day ``since`` (HH:MM:SS.fff: a
    recording's first chunk can hold the previous read's samples): the hottest top frames, and the share of samples
    with a frame of each kind somewhere in the stack (inclusive)."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "96", str(recording)],
                          check=True, capture_output=True, text=True).stdout
    tops: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for event in text.split("jdk.ExecutionSample")[1:]:
        if 'sampledThread = "Executor task' not in event:  # a task thread (renamed when idle)
            continue
        when = re.search(r"startTime = (\S+)", event)
        if when is None or when.group(1) < since:
            continue
        frames = [m.group(1) for line in event.splitlines() if (m := FRAME.match(line))]
        if not frames:
            continue
        total += 1
        tops[frames[0]] += 1
        for kind, pattern in KINDS:
            if any(pattern in f for f in frames):
                inclusive[kind] += 1
    lines = [f"executor-thread CPU samples: {total}", "", "| top frame | samples | share |", "|---|---:|---:|"]
    lines += [f"| `{f}` | {n} | {n / max(total, 1):.1%} |" for f, n in tops.most_common(top)]
    lines += ["", "| anywhere in the stack | samples | share |", "|---|---:|---:|"]
    lines += [f"| {k} | {inclusive[k]} | {inclusive[k] / max(total, 1):.1%} |" for k, _p in KINDS]
    return lines


KINDS = [
    ("Arrow IPC read (ArrowStreamReader / MessageSerializer)", "org.apache.arrow.vector.ipc."),
    ("socket / stream read", "java.io.DataInputStream"),
    ("ArrowColumnVector accessors", "ArrowColumnVector"),
    ("generated projection (UnsafeProjection / codegen)", "GeneratedClass"),
    ("UnsafeRowWriter", "UnsafeRowWriter"),
    ("Variant", "Variant"),
    ("Decimal", "Decimal"),
    ("UTF8String", "UTF8String"),
    ("Parquet (vectorized reader)", "parquet"),
    ("noop write (DataWritingSparkTask)", "DataWritingSparkTask"),
    ("MapInBatch / Python runner", "python."),
]


def worker_daemons(jvm: int) -> list[int]:
    """The JVM's child processes running pyspark's worker daemon (the Python workers are forked from it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # one daemon per kind of worker: the tasks' is the one running ``pyspark.worker``
        if int(stat[stat.rindex(")") + 2:].split()[1]) == jvm and cmdline.rstrip(b"\0").endswith(b"pyspark.worker"):
            found.append(int(entry.name))
    return found


def pyspy_top(collapsed: Path, top: int = 20) -> list[str]:
    """The Python workers' samples in py-spy's collapsed output: own time per function and inclusive time of a few
    steps of the hand-over."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        if "daemon.py" in frames[-1]:
            continue  # the daemon's own accept/select loop (no task work)
        total += n
        own[frames[-1]] += n
        for kind, pattern in PY_KINDS:
            if any(pattern in f for f in frames):
                inclusive[kind] += n
    lines = [f"Python worker samples: {total}", "", "| own frame | samples | share |", "|---|---:|---:|"]
    lines += [f"| `{f}` | {n} | {n / max(total, 1):.1%} |" for f, n in own.most_common(top)]
    lines += ["", "| anywhere in the stack | samples | share |", "|---|---:|---:|"]
    lines += [f"| {k} | {inclusive[k]} | {inclusive[k] / max(total, 1):.1%} |" for k, _p in PY_KINDS]
    return lines


PY_KINDS = [
    ("our read_split (decoding)", "read_split"),
    ("prebuilt read (memory-mapped batches)", "bench_spark_handover"),
    ("Arrow stream write to the JVM (dump_stream / write_batch)", "dump_stream"),
    ("wrap_struct (pyspark's output struct)", "wrap_struct"),
    ("reading the task's input (load_stream)", "load_stream"),
]


PROFILED_RUNS = 3  # one read is too short for enough samples


def profiled(spark, run: Callable[[], None], label: str, jfr_dir: Path | None, pyspy_dir: Path | None) -> list[str]:  # type: ignore[no-untyped-def]
    jvm = jvm_pid(spark)
    spy = None
    lines: list[str] = []
    if pyspy_dir is not None:
        daemons = worker_daemons(jvm)
        pyspy_dir.mkdir(parents=True, exist_ok=True)
        if daemons:
            spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(daemons[0]),
                                    "--subprocesses", "--nonblocking", "--rate", "200", "--format", "raw",
                                    "--output", str(pyspy_dir / f"{label}.txt")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # py-spy attaches
        else:
            lines.append("(no Python worker daemon found: py-spy skipped)")
    since = time.strftime("%H:%M:%S", time.localtime())
    if jfr_dir is not None:
        jfr_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["jcmd", str(jvm), "JFR.start", f"name={label}", "settings=profile"], check=True,
                       capture_output=True)
    for _ in range(PROFILED_RUNS):
        run()
    if jfr_dir is not None:
        recording = jfr_dir / f"{label}.jfr"
        subprocess.run(["jcmd", str(jvm), "JFR.stop", f"name={label}", f"filename={recording}"], check=True,
                       capture_output=True)
        lines += [f"#### JFR, {label}", "", *jfr_top(recording, since), ""]
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        out = pyspy_dir / f"{label}.txt"  # type: ignore[operator]
        if out.exists():
            lines += [f"#### py-spy, {label}", "", *pyspy_top(out), ""]
    return lines


# -- main -------------------------------------------------------------------------------------------------------
def session(confs: list[str]):  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    import spark_logsource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("bench_spark_handover")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "2g"))
    jar = arrow_pipe_jar()
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    for conf in confs:
        key, _, value = conf.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark_logsource.register(spark)
    return spark


def jvm_own_cpu(pid: int) -> float:
    """CPU seconds of the JVM's own threads (not its children's)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_rows(shape: Shape, workdir: Path, batch_rows: int | None) -> int:
    import pyarrow as pa

    reader = pa.ipc.open_file(pa.memory_map(str(prebuilt_file(shape, workdir, batch_rows))))
    return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench-handover"))
    parser.add_argument("--xlog", type=Path, help="an xlog (default: bench_tarantool.py's base workload, made)")
    parser.add_argument("--binlog", type=Path, help="a binlog (default: bench_mysql.py's base workload, made)")
    parser.add_argument("--table", default="bench.orders", help="the table of view=table")
    parser.add_argument("--shapes", default="xlog,xlog-msgpack,xlog-ints,binlog,binlog-table")
    parser.add_argument("--only", default=",".join(READS), help="which of the reads: source,handover,columnar,parquet")
    parser.add_argument("--splits", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds of every read before the timed ones")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-rows", type=int, default=BENCH_BATCH_ROWS,
                        help="rows per batch of every read (batchSize); default 32768, as the recorded figures")
    parser.add_argument("--rebatch", default="",
                        help="the source and the hand-over again with batches of N rows (batchSize): N,N")
    parser.add_argument("--conf", action="append", default=[])
    parser.add_argument("--jfr", type=Path)
    parser.add_argument("--py-spy", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args.workdir.mkdir(parents=True, exist_ok=True)
    xlog, binlog, table = args.xlog, args.binlog, args.table
    if xlog is None or binlog is None:
        made_xlog, made_binlog, table = default_files(args.workdir)
        xlog, binlog = xlog or made_xlog, binlog or made_binlog
    chosen = [shapes(xlog, binlog, table)[name] for name in args.shapes.split(",")]
    rebatch = [int(n) for n in args.rebatch.split(",") if n]
    which = [r for r in READS if r in args.only.split(",")]
    if "columnar" in which and arrow_pipe_jar() is None:
        log.warning("no columnar read: jars/arrow-pipe.jar is not built (jars/arrow-pipe/build.sh)")
        which.remove("columnar")
    which += [f"{r}-{n}" for n in rebatch for r in ("source", "handover") if r in which]
    spark = session(args.conf)
    register_prebuilt(spark, args.splits)
    spark.range(1).write.format("noop").mode("overwrite").save()
    jvm = jvm_pid(spark)
    clock = lambda: cpu_seconds() + process_tree_cpu(jvm)  # noqa: E731
    results: dict[tuple[str, str], Result] = {}
    rows: dict[str, int] = {}
    profiles: list[str] = []
    for shape in chosen:
        rows[shape.name] = count_rows(shape, args.workdir, args.batch_rows)
        runs = reads(spark, shape, args.workdir, args.splits, args.batch_rows, rebatch)
        for _ in range(args.warmup):  # unmeasured: the JIT compiles each read's path
            for name in which:
                runs[name]()
        for _ in range(args.repeat):
            for name in which:
                cpu0, jvm0, started = clock(), jvm_own_cpu(jvm), time.perf_counter()
                runs[name]()
                wall, cpu = time.perf_counter() - started, clock() - cpu0
                result = results.setdefault((shape.name, name), Result())
                result.jvm.append(jvm_own_cpu(jvm) - jvm0)
                result.wall.append(wall)
                result.cpu.append(cpu)
                log.info("%s %s: %.2f s wall, %.2f s CPU", shape.name, name, wall, cpu)
        if args.jfr or args.py_spy:
            for name in (r for r in READS if r in which):
                profiles += profiled(spark, runs[name], f"{shape.name}-{name}", args.jfr, args.py_spy)
    spark.stop()
    print(report(chosen, which, results, rows, args, sys.argv))
    if profiles:
        print("\n".join(profiles))
    return 0


def report(chosen: list[Shape], which: list[str], results: dict[tuple[str, str], Result], rows: dict[str, int],
           args: argparse.Namespace, argv: list[str]) -> str:
    """One row per shape and read: its best wall time, the CPU per row of that run (split into the JVM's own
    threads and the Python processes: workers and driver), and its ratios to Parquet (Parquet's seconds over the
    read's; above 1: faster than Parquet): of the best times, the median of the per-repetition ratios, of CPU."""
    load = os.getloadavg()
    lines = [f"command: `{' '.join(argv)}`", f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
             "", "| shape | read | best wall s | CPU µs/row | of it JVM | of it Python | × Parquet, best wall "
             "| × Parquet, median of repetitions | × Parquet, CPU |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for shape in chosen:
        n = rows[shape.name]
        parquet = results.get((shape.name, "parquet"))
        for r in which:
            res = results[(shape.name, r)]
            best = min(range(len(res.wall)), key=res.wall.__getitem__)
            per_row = 1e6 / n
            ratios = "| – | – | –"
            if parquet is not None:
                each = sorted(p / w for p, w in zip(parquet.wall, res.wall, strict=True))
                pbest = min(range(len(parquet.wall)), key=parquet.wall.__getitem__)
                ratios = (f"| **{parquet.wall[pbest] / res.wall[best]:.2f}** | {each[len(each) // 2]:.2f} "
                          f"| {parquet.cpu[pbest] / res.cpu[best]:.2f}")
            lines.append(f"| {shape.name} | {r} | {res.wall[best]:.2f} | {res.cpu[best] * per_row:.2f} "
                         f"| {res.jvm[best] * per_row:.2f} | {(res.cpu[best] - res.jvm[best]) * per_row:.2f} "
                         f"{ratios} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
