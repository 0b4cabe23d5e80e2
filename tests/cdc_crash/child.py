"""A streaming CDC job in a process of its own, as a user runs one: ``python -m tests.cdc_crash.child job.json``.

It reads one source with ``spark.readStream`` and keeps a Delta table (delta-rs) with the recipe of the docs in its
``foreachBatch``: ``view=table`` of MySQL through ``flat_view`` and ``merge_into_delta`` (docs/cdc.md), ``view=space``
of a Tarantool WAL directory through ``apply_changes`` and one MERGE with the high-water mark (docs/tarantool-cdc.md,
``tests/support/delta_space.py``).
A column the source gained since the target was created is added to the target first, as docs/cdc.md says a user
must. After each batch's MERGE it writes ``batches/<id>.json`` (what the batch held) and appends to ``attempts.log``,
so the test waits for states of the job and kills it (SIGKILL of its process group: the JVM dies with it).

Exit status: 0 when an ``availableNow`` run ended, 3 when the query stopped with an error (its message in
``error.txt``), 1 on anything else.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

log = logging.getLogger("tests.cdc_crash.child")

#: The password of a live source comes from the environment (never in the job file or a log).
PASSWORD_ENV = "CDC_CRASH_PASSWORD"
EXIT_STOPPED = 3


def _session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("cdc-crash-child")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "1g")
               .getOrCreate())
    import spark_logsource

    if hasattr(spark_logsource, "register"):
        spark_logsource.register(session)
    return session


class Recorder:
    """The job's traces for the test: one file per batch (rewritten when Spark runs it again) and every attempt."""

    def __init__(self, state: Path) -> None:
        self.state = state
        (state / "batches").mkdir(parents=True, exist_ok=True)

    def record(self, batch_id: int, changes: pa.Table) -> None:
        ops = changes.column("op").to_pylist() if changes.num_rows else []
        seqs = [int(s) for s in changes.column("seq").to_pylist()] if changes.num_rows else []
        info = {"batch": batch_id, "rows": changes.num_rows, "ops": sorted(set(ops)), "columns": changes.column_names,
                "seqs": [min(seqs), max(seqs)] if seqs else None, "pid": os.getpid()}
        tmp = self.state / "batches" / f".{batch_id}.tmp"
        tmp.write_text(json.dumps(info))
        tmp.replace(self.state / "batches" / f"{batch_id}.json")
        with open(self.state / "attempts.log", "a", encoding="utf-8") as out:
            out.write(json.dumps(info) + "\n")


def mysql_sink(job: dict[str, Any], recorder: Recorder) -> Any:
    from spark_logsource.cdc import flat_view, merge_into_delta, spark_to_arrow
    from tests.support.delta_space import add_missing_columns

    target, keys = job["target"], job["keys"]

    def upsert(batch_df: Any, batch_id: int) -> None:
        flat = spark_to_arrow(flat_view(batch_df, keys))
        if flat.num_rows:
            add_missing_columns(target, flat.drop_columns(["op"]).schema)
            merge_into_delta(target, flat, keys)
        recorder.record(batch_id, flat)

    return upsert


def tarantool_sink(job: dict[str, Any], recorder: Recorder) -> Any:
    from spark_logsource.cdc import spark_to_arrow
    from spark_logsource.tarantool.table.apply import space_spec
    from tests.support.delta_space import apply_batch

    target = Path(job["target"])

    def upsert(batch_df: Any, batch_id: int) -> None:
        changes = spark_to_arrow(batch_df)
        if changes.num_rows:
            spec = space_spec(job["path"], job["space"])  # the space's format as the directory has it now
            apply_batch(target, spec, changes)
        recorder.record(batch_id, changes)

    return upsert


def run(job: dict[str, Any]) -> int:
    state = Path(job["state"])
    recorder = Recorder(state)
    spark = _session()
    options = dict(job["options"])
    if job.get("password"):
        options["password"] = os.environ[PASSWORD_ENV]
    reader = spark.readStream.format(job["format"]).options(**options)
    df = reader.load(job["path"]) if job.get("path") and job["format"].endswith(("-xlog", "-binlog")) else reader.load()
    sink = mysql_sink(job, recorder) if job["kind"] == "mysql" else tarantool_sink(job, recorder)
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", job["checkpoint"])
    writer = writer.trigger(availableNow=True) if job["trigger"] == "availableNow" else \
        writer.trigger(processingTime=job["trigger"])
    query = writer.start()
    (state / "started").write_text(str(os.getpid()))
    try:
        query.awaitTermination()
    except Exception as exc:  # the query stopped: the message is the test's to check
        log.info("the query stopped: %s", exc)
        (state / "error.txt").write_text(str(exc))
        return EXIT_STOPPED
    finally:
        spark.stop()
    return 0


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    job = json.loads(Path(sys.argv[1]).read_text())
    sys.exit(run(job))


if __name__ == "__main__":
    main()
