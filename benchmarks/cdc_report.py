"""What the typed CDC benchmarks share (``bench_mysql_cdc.py``, ``bench_tarantool_cdc.py``): their common options,
the Spark pair they time (``spark.read`` of a directory into ``noop`` against ``readStream`` with
``trigger(availableNow=True)`` into ``noop``), and their report: a throughput table with each reader's ratio to its
peer within the same repetition, and a latency table."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from local_spark import spark_cpu, timed, warm_spark_session

#: (wall, CPU) seconds of each repetition, by reader.
Results = dict[str, list[tuple[float, float]]]


def add_common_arguments(parser: argparse.ArgumentParser, *, seconds: float) -> None:
    """``--repeat``, the latency run's ``--seconds``, ``--period``, ``--trigger``, ``--no-spark``, ``--no-latency``."""
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=seconds, help="length of each latency run")
    parser.add_argument("--period", type=float, default=0.05, help="seconds between the latency writer's commits")
    parser.add_argument("--trigger", type=float, default=1.0, help="Spark trigger / follow() poll, seconds")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-latency", action="store_true")


def setup() -> None:
    """Log to stderr; Spark's Python workers run this interpreter."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def command_line(script: str, repo: Path) -> str:
    """The command that ran ``script``, as the report quotes it."""
    return "python3 " + " ".join(shlex.quote(a) for a in [os.path.relpath(script, repo), *sys.argv[1:]])


def spark_batch(spark: Any, fmt: str, directory: Path, options: Mapping[str, str]) -> int:
    """``spark.read`` of ``directory`` into ``noop``; the rows are not counted (-1)."""
    spark.read.format(fmt).options(**options).load(str(directory)).write.format("noop").mode("overwrite").save()
    return -1


def spark_stream(spark: Any, fmt: str, directory: Path, options: Mapping[str, str]) -> int:
    """``readStream`` of ``directory`` from its start, ``trigger(availableNow=True)`` into ``noop``: the rows read."""
    with tempfile.TemporaryDirectory(prefix="bench-cdc-ckpt-") as checkpoint:
        query = (spark.readStream.format(fmt).options(**options).option("startingPosition", "earliest")
                 .load(str(directory)).writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        return sum(int(p["numInputRows"]) for p in query.recentProgress)


def time_spark(results: Results, fmt: str, directory: Path, options: Mapping[str, str], rows: int,
               repeat: int) -> Any:
    """A warm ``local[2]`` session, one untimed batch read (the Python workers start, the JVM compiles), then
    ``repeat`` times the batch read and the stream side by side into ``results`` ("spark batch", "spark stream");
    the CPU of this process, the JVM and its workers. Returns the session."""
    spark = warm_spark_session()
    spark_batch(spark, fmt, directory, options)
    cpu = spark_cpu(spark)
    for _ in range(repeat):
        results.setdefault("spark batch", []).append(
            timed("spark batch", lambda: spark_batch(spark, fmt, directory, options), rows, cpu))
        results.setdefault("spark stream", []).append(
            timed("spark stream", lambda: spark_stream(spark, fmt, directory, options), rows, cpu))
    return spark


def _each(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({', '.join(f'{x:.2f}' for x in values)})"


def peer_ratios(runs: list[tuple[float, float]], peer: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """The peer's seconds over the reader's, wall and CPU, repetition by repetition."""
    return ([p[0] / r[0] for r, p in zip(runs, peer, strict=True)],
            [p[1] / r[1] for r, p in zip(runs, peer, strict=True)])


def throughput_table(results: Results, labels: Mapping[str, str], peers: Mapping[str, str], rows: int,
                     unit: str) -> list[str]:
    """One line per reader of ``labels`` that ran: median wall and CPU seconds, ``unit`` per second, and the
    ratios to its peer of ``peers`` (median; each repetition), or dashes for a reader without one."""
    lines = [f"| reader | wall s (median) | CPU s (median) | {unit}/s | × its peer, wall (median; each run) "
             "| × its peer, CPU (median; each run) |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, label in labels.items():
        if key not in results:
            continue
        runs = results[key]
        wall = statistics.median([w for w, _c in runs])
        cpu = statistics.median([c for _w, c in runs])
        cells = "— | —"
        if key in peers:
            ratios, cpu_ratios = peer_ratios(runs, results[peers[key]])
            cells = f"{_each(ratios)} | {_each(cpu_ratios)}"
        lines.append(f"| {label} | {wall:.2f} | {cpu:.2f} | {rows / wall:,.0f} | {cells} |")
    return lines


def latency_table(latency: Mapping[str, list[float]], names: Mapping[str, str],
                  percentiles: Callable[[list[float]], tuple[float, float, float]]) -> list[str]:
    """One line per latency run: rows, p50, p95, p99 and max seconds (blank with fewer than two rows)."""
    lines = ["| reader | rows | p50 s | p95 s | p99 s | max s |", "|---|---:|---:|---:|---:|---:|"]
    for key, delays in latency.items():
        if len(delays) < 2:
            lines.append(f"| {names[key]} | {len(delays)} | | | | |")
            continue
        p50, p95, p99 = percentiles(delays)
        lines.append(f"| {names[key]} | {len(delays):,} | {p50:.3f} | {p95:.3f} | {p99:.3f} | {max(delays):.3f} |")
    return lines


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())
