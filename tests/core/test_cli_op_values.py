"""README's table of ``op`` values per format and view, checked against what each one prints.

Each documented (format, view) is read with ``spark-logsource cat`` from logs a real server wrote (Tarantool 2.6's
``dml`` workload, MariaDB 10.11's shared binlog workload, and that MariaDB itself for ``mysql-replication``); the
distinct ``op`` values printed must be exactly the documented ones, so the table cannot drift from the code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.mysql_workload import Workload, build_workload

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]
USER, PASSWORD = "opdoc", "op-doc-Pw_7"


def documented() -> dict[tuple[str, str], set[str]]:
    """(format, view) → the ``op`` values README's "The op column" table lists."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    if "\n## The `op` column\n" not in text:
        return {}
    section = text.split("\n## The `op` column\n", 1)[1].split("\n## ", 1)[0]
    table: dict[tuple[str, str], set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        view = re.findall(r"`([^`]+)`", cells[1])[0]
        values = set(re.findall(r"`([^`]+)`", cells[2]))
        for fmt in re.findall(r"`([^`]+)`", cells[0]):
            table[(fmt, view)] = values
    return table


@pytest.fixture(scope="module")
def binlog_workload(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> Workload:
    return build_workload(mariadb, tmp_path_factory)


def cat(*args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "cat", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def printed_ops(fmt: str, view: str, tarantool_workloads: Any, binlog_workload: Workload, mariadb: Any) -> set[str]:
    if fmt == "tarantool-xlog":
        directory = str(tarantool_workloads["dml"].directory)
        return {r["op"] for r in cat(directory, "--option", f"view={view}", "--option", "space=dml")}
    path = str(binlog_workload.path)
    if fmt == "mysql-binlog":
        table = ("--option", "table=g_shop.orders") if view == "table" else ()
        return {r["op"] for r in cat(path, "--source", fmt, "--option", f"view={view}", *table)}
    if fmt == "mysql-replication":
        mariadb.execute(f"CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'")
        mariadb.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{USER}'@'%'")
        name, size = Path(path).name, Path(path).stat().st_size
        rows = cat(f"mysql://{USER}@127.0.0.1:{mariadb.port}", "--option", f"view={view}",
                   "--option", f"startingPosition={json.dumps({'file': name, 'pos': 4})}",
                   "--option", f"endingPosition={json.dumps({'file': name, 'pos': size})}",
                   "--option", "serverId=4401", env={"SPARK_LOGSOURCE_PASSWORD": PASSWORD})
        return {r["op"] for r in rows}
    raise AssertionError(f"README documents op values of {fmt}, which this test does not read: add it here")


def test_readme_lists_the_op_values_of_every_view_with_an_op_column() -> None:
    table = documented()
    assert {("mysql-binlog", "changes"), ("mysql-replication", "changes"), ("mysql-binlog", "table"),
            ("tarantool-xlog", "space")} <= set(table), table


@pytest.mark.parametrize("fmt_view", sorted(documented()), ids="/".join)
def test_printed_op_values_are_the_documented_ones(fmt_view: tuple[str, str], tarantool_workloads: Any,
                                                   binlog_workload: Workload, mariadb: Any) -> None:
    fmt, view = fmt_view
    assert printed_ops(fmt, view, tarantool_workloads, binlog_workload, mariadb) == documented()[fmt_view]
