"""What the Spark benchmarks share: the local[2] session (no UI, UTC, the package's data sources registered) and
the CPU seconds of the JVM with its Python workers."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def spark_session():
    from pyspark.sql import SparkSession

    import spark_logsource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_logsource.register(spark)
    return spark


def jvm_pid(spark) -> int:
    """The process id of the session's JVM (the Python workers are its descendants)."""
    return int(spark.sparkContext._jvm.ProcessHandle.current().pid())


def process_tree_cpu(root: int) -> float:
    """CPU seconds of process ``root`` and its descendants, including their reaped children (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        stats[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)  # u, s, cu, cs time
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(child for child, (ppid, _cpu) in stats.items() if ppid == pid)
    return total


def warm_spark_session():
    """:func:`spark_session`, with one trivial job run so the first measured one does not pay the JVM's start."""
    spark = spark_session()
    spark.range(1).write.format("noop").mode("overwrite").save()
    return spark


def cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children."""
    import resource
    import time

    own = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + children.ru_utime + children.ru_stime


def spark_cpu(spark):
    """A clock of CPU seconds: this process's and those of the session's JVM with its Python workers."""
    pid = jvm_pid(spark)
    return lambda: cpu_seconds() + process_tree_cpu(pid)


def timed(label: str, action, expected: int, cpu=cpu_seconds) -> tuple[float, float]:
    """(wall, CPU) seconds of ``action``, which returns the rows it read (-1: not counted); a count other than
    ``expected`` ends the benchmark."""
    import logging
    import time

    cpu_started, started = cpu(), time.perf_counter()
    counted = action()
    wall, used = time.perf_counter() - started, cpu() - cpu_started
    if counted >= 0 and counted != expected:
        raise SystemExit(f"{label}: {counted} rows, expected {expected}")
    logging.getLogger("bench").info("%s: %.2f s wall, %.2f s CPU (%.0f rows/s)", label, wall, used, expected / wall)
    return wall, used


def register_prebuilt(spark, parts: int) -> None:
    """Data source ``bench-prebuilt``: option ``path`` names an Arrow IPC file; each of ``parts`` tasks memory-maps it
    and yields its share of the batches as they are (no decoding, no copy), so what a read of it costs is Spark's
    own part: the Arrow stream to the JVM and the conversion into rows."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from spark_logsource.spark.schema import spark_schema

    class PrebuiltReader(DataSourceReader):
        def __init__(self, where: str) -> None:
            self.where = where

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(parts)]

        def read(self, partition: InputPartition):
            reader = pa.ipc.open_file(pa.memory_map(self.where))
            n = reader.num_record_batches
            for i in range(partition.value * n // parts, (partition.value + 1) * n // parts):
                yield reader.get_batch(i)

    class Prebuilt(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench-prebuilt"

        def schema(self):
            return spark_schema(pa.ipc.open_file(pa.memory_map(self.options["path"])).schema)

        def reader(self, schema):
            return PrebuiltReader(self.options["path"])

    spark.dataSource.register(Prebuilt)
