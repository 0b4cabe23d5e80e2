"""Shared pytest fixtures: one SparkSession and one server of each kind per test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.servers.tarantool", "tests.support.servers.mariadb"]

REPO = Path(__file__).resolve().parent.parent
#: Real-server files copied from their upstream projects (sources and licences in ``fixtures/README.md``).
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The real-server files under ``tests/fixtures`` (read-only)."""
    return FIXTURES


def _spark_session(pushdown: bool):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-logsource-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.python.filterPushdown.enabled", "true" if pushdown else "false")
    )
    return builder.getOrCreate()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] SparkSession for the whole suite, with our formats registered explicitly."""
    session = _spark_session(pushdown=False)
    import spark_logsource

    if hasattr(spark_logsource, "register"):
        spark_logsource.register(session)
    yield session
    session.stop()
