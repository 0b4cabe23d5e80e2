"""Fixtures of the deployment tests: a Spark standalone cluster (a master and two one-core workers) and a Spark
Connect session, each started once per pytest process.

A process holds one SparkContext: the suite's ``local[2]`` session, this cluster's driver or the Connect
server's. So the two groups here run each in its own pytest process (``scripts/test.sh``:
``pytest -m cluster tests/deploy`` and ``pytest -m connect tests/deploy``), and a run that collects one of them
beside any other test leaves that group out (deselected, with a line saying how to run it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mysql_stream.conftest import StreamServer
from tests.support.deploy import Dataset, make_bulk_xlog, small_datasets
from tests.support.mysql_cdc import create_table
from tests.support.servers.mariadb_stream import replica_user_server
from tests.support.servers.spark_standalone import StandaloneCluster, wait_for_executors

#: The markers of the groups that each need a pytest process of their own.
GROUPS = ("cluster", "connect", "pipelines")


def _group(item: pytest.Item) -> str | None:
    return next((g for g in GROUPS if item.get_closest_marker(g) is not None), None)


@pytest.hookimpl(trylast=True)  # after -m and -k have chosen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {_group(item) for item in items}
    if len(groups) <= 1:
        return  # one group alone (or no deployment test): it runs
    left_out = [item for item in items if _group(item) is not None]
    items[:] = [item for item in items if _group(item) is None]
    config.hook.pytest_deselected(items=left_out)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"tests/deploy: {len(left_out)} cluster / Connect / pipelines tests left out of this run; "
                            "they run one group per process: pytest -m cluster tests/deploy; pytest -m connect "
                            "tests/deploy; pytest -m pipelines tests/deploy")


def _no_local_session() -> None:
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.fail("a SparkContext is already running in this process: run the deployment tests one group per "
                    "process (pytest -m cluster tests/deploy; pytest -m connect tests/deploy)")


@pytest.fixture(scope="session")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Dataset]:
    """The binlog, the YugabyteDB directory and a 400,000-row xlog, each read in several splits."""
    found = {d.name: d for d in small_datasets()}
    bulk = make_bulk_xlog(tmp_path_factory.mktemp("bulk"))
    found[bulk.name] = bulk
    return found


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two workers of one core and 1 GiB, on loopback, stopped by their process ids at the end."""
    started = StandaloneCluster(tmp_path_factory.mktemp("standalone"), python=sys.executable).start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def cluster_spark(cluster: StandaloneCluster) -> Iterator[Any]:
    """The driver of an application on the cluster, its two executors registered. No ``register()``: the
    formats are found by Spark's own lookup of the installed ``pyspark_*`` modules, as a user's would be."""
    _no_local_session()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver's JVM, like the daemons, on loopback only
    session = cluster.session_builder("spark-logsource-cluster-tests").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    wait_for_executors(session, cluster.workers)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_spark() -> Iterator[Any]:
    """A Spark Connect client of a local Connect server (``remote("local[2]")``), as Databricks serverless and
    shared clusters run PySpark. No ``register()``: a Connect client cannot register a Python data source from
    its own process, so the formats must be found by the server's lookup of the installed modules."""
    _no_local_session()
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from spark_logsource.spark.columnar import arrow_pipe_jar

    builder = SparkSession.builder.remote("local[2]").appName("spark-logsource-connect-tests")
    jar = arrow_pipe_jar()  # the columnar JVM reader on the server's class path, when built
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    session = builder.config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "2") \
        .getOrCreate()
    yield session
    session.stop()


#: The table the pipeline tests' writer changes and their pipeline copies.
PIPELINE_TABLE = "cdc.p"


@pytest.fixture(scope="module")
def pipeline_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    """A MariaDB 10.11 of its own for ``spark-pipelines run`` (as ``tests/mysql_cdc``'s): the replication account
    with SELECT on the database, and the table ``cdc.p`` (the columns of :mod:`tests.support.mysql_cdc`)."""
    with replica_user_server(tmp_path_factory, "mariadb-pipelines", "cdc") as server:
        create_table(server, PIPELINE_TABLE)
        yield server
