"""``spark-logsource cat`` / ``sql`` on a real MariaDB binlog, checked against ``mariadb-binlog``.

The binlog and its oracle listing come from the same workload as tests/test_mysql_spark.py (fixture ``workload``:
written by the session's real MariaDB, expected rows parsed from ``mariadb-binlog -vv`` output).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.mysql_workload import Workload, oracle_listing

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]


def spark_logsource(*args: str, timeout: float = 120) -> str:
    """Run the CLI as a user would (``python -m spark_logsource.cli``); return its stdout."""
    # Spark's Python workers must be this interpreter (the one with pyarrow), whatever ran the tests before
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-m", "spark_logsource.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _int_or_none(text: str | None) -> int | None:
    return None if text is None or text == "NULL" else int(text.split(" ")[0])


def test_cat_database_and_table_rows_match_oracle(workload: Workload) -> None:
    """--database/--table select g_shop.orders; ids, quantities and SKUs of both images equal mariadb-binlog's."""
    records = json_lines(spark_logsource("cat", str(workload.path), "--database", "g_shop", "--table",
                                         "g_shop.orders"))

    def image(values: dict[str, Any] | None) -> tuple[Any, ...]:
        values = values or {}
        return values.get("id"), values.get("qty"), values.get("sku")

    actual = sorted((r["pos"], r["row_index"], r["database"], r["table"], r["op"], image(r["before"]),
                     image(r["after"])) for r in records)

    def oracle_image(values: dict[str, Any]) -> tuple[Any, ...]:
        if not values:
            return None, None, None
        sku = values["@5"].text
        return _int_or_none(values["@1"].text), _int_or_none(values["@3"].text), \
            None if sku == "NULL" else sku.strip("'")

    expected = sorted((r.pos, r.row_index, r.database, r.table, r.op, oracle_image(r.row.before),
                       oracle_image(r.row.after)) for r in workload.rows
                      if (r.database, r.table) == ("g_shop", "orders"))
    assert workload.columns[("g_shop", "orders")][:5] == [("id", "int"), ("customer_id", "int"),
                                                        ("qty", "smallint"), ("amount", "bigint"),
                                                        ("sku", "varchar")]
    assert len(expected) > 100
    assert actual == expected


def test_cat_start_position_and_server_id_match_oracle(workload: Workload) -> None:
    starts = sorted(e.pos for e in workload.listing.events
                    if e.is_transaction_start and e.pos > min(workload.listing.rows_event_positions))
    start = starts[1]
    records = json_lines(spark_logsource("cat", str(workload.path), "--start-position", str(start),
                                         "--server-id", "1"))
    actual = Counter((r["database"], r["table"], r["op"]) for r in records)
    expected = oracle_listing(workload.path, f"--start-position={start}", "--server-id=1").row_counts
    assert 0 < sum(expected.values()) < len(workload.rows)
    assert actual == expected
    assert all(r["pos"] >= start and r["server_id"] == 1 for r in records)


def test_cat_view_events_positions_match_oracle(workload: Workload) -> None:
    """--view events from a transaction start: the events at the positions mariadb-binlog lists from there."""
    rows_positions = sorted(workload.listing.rows_event_positions)
    start = next(e.pos for e in workload.listing.events
                 if e.is_transaction_start and e.pos > rows_positions[len(rows_positions) // 2])
    records = json_lines(spark_logsource("cat", str(workload.path), "--view", "events", "--start-position",
                                         str(start)))
    expected = [e.pos for e in workload.listing.events if e.pos >= start]
    assert [r["pos"] for r in records] == expected
    by_pos = {e.pos: e for e in workload.listing.events}
    assert [r["server_id"] for r in records] == [by_pos[p].server_id for p in expected]
    rows_events = [r["pos"] for r in records if r["event_type"] in ("WRITE_ROWS_V1", "UPDATE_ROWS_V1",
                                                                    "DELETE_ROWS_V1")]
    assert rows_events == [p for p in rows_positions if p >= start]


def test_sql_counts_per_table_and_op(workload: Workload) -> None:
    """One Spark run (~10 s): GROUP BY database, table, op equals mariadb-binlog's row counts."""
    out = spark_logsource("sql", "SELECT database, `table`, op, count(*) AS n FROM b GROUP BY 1, 2, 3",
                          "--view", f"b=mysql-binlog:{workload.path}", timeout=300)
    lines = out.splitlines()
    assert lines[0].split("\t") == ["database", "table", "op", "n"]
    actual = {}
    for line in lines[1:]:
        db, table, op, n = line.split("\t")
        actual[(db, table, op)] = int(n)
    assert actual == dict(oracle_listing(workload.path).row_counts)
