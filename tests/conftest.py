"""Shared pytest fixtures: one SparkSession and one server of each kind per test session, and the twin fixture."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_logsource.native import pure_python_forced
from tests.support.twins import TWINS, Twin, activate

#: The real-server fixtures, each started when a test first asks for it.
pytest_plugins = ["tests.support.servers.tarantool", "tests.support.servers.tarantool_live",
                  "tests.support.servers.mariadb", "tests.support.servers.mariadb_stream"]

REPO = Path(__file__).resolve().parent.parent
#: Real-server files copied from their upstream projects (sources and licences in ``fixtures/README.md``).
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(params=TWINS)
def twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Twin:
    """The implementation of the decoders this test runs: ``c`` (the compiled kernels) or ``python`` (their
    references), as if the process had started without or with ``SPARK_LOGSOURCE_PURE_PYTHON=1``
    (``tests/support/twins.py``). ``c`` is skipped, with the reason, where the kernels are not built."""
    return activate(request.param, monkeypatch)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "differential: compares the C and Python twins itself, whatever "
                            "SPARK_LOGSOURCE_PURE_PYTHON says (so the pure-Python pass leaves it out)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the SparkSession ``spark`` (so ``-m "not spark"`` leaves it out however it is
    written), and under ``SPARK_LOGSOURCE_PURE_PYTHON=1`` leave out the tests over ``twin`` and the ``differential``
    ones: they run both twins in every pass already, and the pure-Python pass is for the code that picks its
    implementation itself."""
    both = []
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names:
            item.add_marker(pytest.mark.spark)
        if "twin" in names or item.get_closest_marker("differential"):
            both.append(item)
    if both and pure_python_forced():
        config.hook.pytest_deselected(items=both)
        left_out = set(map(id, both))
        items[:] = [item for item in items if id(item) not in left_out]


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
    from spark_logsource.spark.columnar import arrow_pipe_jar
    from tests.support.lying_pipe import MODULES

    jar = arrow_pipe_jar()  # the columnar JVM reader, when built (scripts/setup.sh builds it where a JDK is)
    if jar is not None:
        builder = builder.config("spark.jars", jar).config("spark.logsource.arrowPipe.extraModules", MODULES)
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
