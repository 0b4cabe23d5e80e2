"""``spark-pipelines run`` of ``examples/mysql_cdc_pipeline`` against a real MariaDB 10.11, in a subprocess as a user
runs it: the ``mysql-replication`` stream with ``view=table`` appended to a streaming table, two runs (the second
resumes at the first's checkpoint) while a writer commits, and the table rebuilt from the appended changes equals
the server's ``SELECT *``. The AUTO CDC flow of the example cannot run with pyspark's own table formats (none
supports MERGE): a second test runs it and asserts the exact error, so the day it runs, that test says so.
Run alone: ``pytest -m pipelines tests/deploy``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
import yaml

from tests.deploy.conftest import PIPELINE_TABLE
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import TableWriter, assert_same_table, rebuild, server_rows
from tests.support.waiting import QUERY_TIMEOUT

pytestmark = [pytest.mark.pipelines, pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mysql_cdc_pipeline"
#: Seconds for one ``spark-pipelines run``: a JVM, a Spark Connect server and the Python workers start each time.
RUN_TIMEOUT = 2 * QUERY_TIMEOUT


@dataclass
class Run:
    returncode: int
    output: str


class Pipeline:
    """A copy of the example project in ``root`` pointed at ``server``; its tables live under ``root``."""

    def __init__(self, root: Path, server: StreamServer, *, auto_cdc: bool, target_format: str = "delta") -> None:
        self.root = root
        self.project = root / "project"
        shutil.copytree(EXAMPLE, self.project, ignore=shutil.ignore_patterns("__pycache__"))
        spec = self.project / "spark-pipeline.yml"
        config = yaml.safe_load(spec.read_text())
        config["storage"] = (root / "storage").as_uri()
        settings = config["configuration"]
        assert not [k for k in settings if "password" in k.lower()], "the password comes from the environment"
        settings["spark-logsource.pipeline.uri"] = server.uri
        settings["spark-logsource.pipeline.table"] = PIPELINE_TABLE
        settings["spark-logsource.pipeline.startingPosition"] = "earliest"
        settings["spark-logsource.pipeline.autoCdc"] = "true" if auto_cdc else "false"
        settings["spark-logsource.pipeline.targetFormat"] = target_format
        spec.write_text(yaml.safe_dump(config))
        self.spec = spec

    def run(self) -> Run:
        """``spark-pipelines run`` in its own process group (its JVM starts a Python client), ended with the group
        on a timeout."""
        env = dict(os.environ, MYSQL_CDC_PASSWORD=CDC_PASSWORD, PYSPARK_PYTHON=sys.executable,
                   PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        # Hive's catalog (a Derby metastore) keeps the tables between runs; it and the tables' files (metastore_db,
        # spark-warehouse) are made in the working directory
        command = [str(Path(sys.executable).parent / "spark-pipelines"), "--conf",
                   "spark.sql.catalogImplementation=hive", "run", "--spec", str(self.spec)]
        process = subprocess.Popen(command, cwd=self.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        try:
            output, _ = process.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            pytest.fail(f"spark-pipelines run did not end in {RUN_TIMEOUT} s; its output:\n{output[-5000:]}")
        return Run(process.returncode, output)

    def table(self, name: str) -> list[dict[str, Any]]:
        """A pipeline table's rows, read from its Parquet files with pyarrow (no Spark in this process)."""
        path = self.root / "spark-warehouse" / name
        assert path.is_dir(), f"no table {name} under {self.root / 'spark-warehouse'}"
        rows: list[dict[str, Any]] = ds.dataset(str(path), format="parquet").to_table().to_pylist()
        return rows


def _assert_same_table(changes: list[dict[str, Any]], server: StreamServer) -> None:
    assert_same_table(rebuild(changes), server_rows(server, PIPELINE_TABLE))


def _succeeded(run: Run) -> None:
    assert run.returncode == 0, f"spark-pipelines run failed (rc {run.returncode}):\n{run.output[-8000:]}"
    assert CDC_PASSWORD not in run.output


def test_appended_changes_rebuild_the_table_across_two_runs(pipeline_server: StreamServer, tmp_path: Path) -> None:
    writer = TableWriter(pipeline_server, PIPELINE_TABLE, seed=31)
    writer.transactions(40)
    pipeline = Pipeline(tmp_path, pipeline_server, auto_cdc=False)

    _succeeded(pipeline.run())
    first = pipeline.table("changes")
    assert len(first) > 40 and {r["op"] for r in first} >= {"c", "u", "d"}
    _assert_same_table(first, pipeline_server)

    writer.transactions(30)
    pipeline_server.flush_logs()  # the second run also reads across a rotation
    writer.transactions(30)
    _succeeded(pipeline.run())
    rows = pipeline.table("changes")
    seqs = [r["seq"] for r in rows]
    assert len(set(seqs)) == len(seqs), "every change once, the first run's not read again"
    assert len(rows) > len(first) + 60
    assert all(isinstance(s, Decimal) for s in seqs)
    _assert_same_table(rows, pipeline_server)


def test_auto_cdc_flow_stops_without_a_merge_capable_format(pipeline_server: StreamServer, tmp_path: Path) -> None:
    """pyspark 4.3.0's own formats have no MERGE (no table of its jars implements row-level operations), so the
    flow is refused before it reads. When this test fails because the run succeeded, AUTO CDC runs here: compare
    its ``replica`` with the server's ``SELECT *`` instead."""
    TableWriter(pipeline_server, PIPELINE_TABLE, seed=32).transactions(5)
    pipeline = Pipeline(tmp_path, pipeline_server, auto_cdc=True, target_format="parquet")
    run = pipeline.run()
    assert run.returncode != 0, f"the AUTO CDC flow ran: check its target against SELECT *\n{run.output[-4000:]}"
    assert ("[AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE] Cannot start AutoCDC flow: the target table "
            "`spark_catalog`.`default`.`replica` (format: parquet) does not support row-level operations. AutoCDC "
            "requires a target backed by a connector that supports MERGE.") in run.output, run.output[-8000:]
    assert CDC_PASSWORD not in run.output
