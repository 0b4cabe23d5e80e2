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
