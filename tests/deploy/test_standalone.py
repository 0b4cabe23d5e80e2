"""On a Spark standalone cluster (a master and two one-core workers, ``tests/deploy/conftest.py``): batch reads
split across both executors equal the Arrow API's rows, a stream is exactly once, and an executor killed in the
middle of a read is replaced without changing the result. Run alone: ``pytest -m cluster tests/deploy``."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.support.deploy import Dataset, arrow_rows, expected_rows, read_df, spark_rows, stream_into_parquet
from tests.support.servers.spark_standalone import StandaloneCluster, wait_for_executors

pytestmark = pytest.mark.cluster

EXECUTOR_COLUMN, SPLIT_COLUMN = "_test_executor", "_test_split"


@pytest.mark.parametrize("name", ["binlog", "xlog", "yugabyte"])
def test_batch_read_split_across_both_executors_equals_the_arrow_api(cluster_spark: Any, datasets: dict[str, Dataset],
                                                                     name: str) -> None:
    from pyspark.sql import functions as F

    data = datasets[name]
    # an executor's working directory is named by its id (work-dir/app-id/executor-id); the UDF runs in the
    # task that read the split
    executor = F.udf(lambda: os.path.basename(os.getcwd()), "string").asNondeterministic()
    df = read_df(cluster_spark, data)
    columns = df.columns
    tagged = df.select(*columns, executor().alias(EXECUTOR_COLUMN), F.spark_partition_id().alias(SPLIT_COLUMN))
    collected = tagged.collect()
    assert {r[EXECUTOR_COLUMN] for r in collected} == {"0", "1"}, "both executors read splits"
    assert len({r[SPLIT_COLUMN] for r in collected}) >= data.min_splits
    assert spark_rows(tagged.select(*columns)) == expected_rows(data)


def test_read_stream_into_parquet_is_exactly_once(cluster_spark: Any, tmp_path: Path) -> None:
    outcome = stream_into_parquet(cluster_spark, tmp_path)
    assert 0 < outcome.before_restart < len(outcome.expected)
    assert len(set(outcome.rows)) == len(outcome.rows), "no row twice"
    assert outcome.rows == outcome.expected


def _stage_with_both_executors_busy(spark: Any) -> tuple[int, int] | None:
    """(completed, total) tasks of an active stage whose two tasks run now, one on each executor."""
    tracker = spark.sparkContext.statusTracker()
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None and info.numActiveTasks == 2 and info.numCompletedTasks < info.numTasks:
            return info.numCompletedTasks, info.numTasks
    return None


def _held_at_gate(df: Any, gate: Path) -> Any:
    """The same rows, each task held after its first rows until ``gate`` exists: a task is then surely running on
    each executor when one is killed, however fast or loaded the machine is."""
    from pyspark.sql import functions as F

    gate_path = str(gate)

    def wait_for_gate() -> bool:
        deadline = time.monotonic() + 600
        while not os.path.exists(gate_path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the test never opened {gate_path}")
            time.sleep(0.05)
        return True

    # nondeterministic, so the optimizer keeps the filter where it is and runs it on every row
    held = F.udf(lambda _: wait_for_gate(), "boolean").asNondeterministic()
    return df.where(held(F.col(df.columns[0])))


def test_executor_killed_mid_read_is_replaced_and_the_result_is_exact(cluster: StandaloneCluster,
                                                                      cluster_spark: Any,
                                                                      datasets: dict[str, Dataset],
                                                                      tmp_path: Path) -> None:
    data = datasets["xlog"]
    columns = ["file", "offset", "lsn", "tuple"]
    expected = arrow_rows(spark_logsource.read(data.fmt, str(data.path), **data.options).select(columns))
    wait_for_executors(cluster_spark, 2)
    executors = cluster.executor_pids()
    assert len(executors) == 2
    gate = tmp_path / "gate"
    df = _held_at_gate(read_df(cluster_spark, data).select(*columns), gate)
    outcome: dict[str, Any] = {}

    def collect() -> None:
        try:
            outcome["rows"] = spark_rows(df)
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    busy = None
    while busy is None and reader.is_alive() and time.monotonic() < deadline:
        busy = _stage_with_both_executors_busy(cluster_spark)
        if busy is None:
            time.sleep(0.02)
    assert busy is not None, f"the read never had a task running on each executor: {outcome.get('error')}"
    assert busy[0] == 0, "a task ended before the gate opened"
    os.kill(executors[0], signal.SIGKILL)
    gate.touch()
    reader.join(timeout=300)
    assert not reader.is_alive(), "the read did not finish after the executor was killed"
    assert "error" not in outcome, outcome.get("error")
    assert outcome["rows"] == expected
    # the worker starts a new executor for the application in place of the killed one
    deadline = time.monotonic() + 120
    while not (len(cluster.executor_pids()) == 2 and executors[0] not in cluster.executor_pids()):
        assert time.monotonic() < deadline, f"no executor replaced the killed one: {cluster.executor_pids()}"
        time.sleep(0.1)
    wait_for_executors(cluster_spark, 2)
