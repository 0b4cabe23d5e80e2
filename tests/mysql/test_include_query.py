"""``includeQuery=false`` (the default) leaves only the query column empty; ``true`` fills it."""

from __future__ import annotations

from pathlib import Path

import pytest

import spark_logsource

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "mysql"


@pytest.mark.parametrize("name", ["apecloud/mysql-bin.000057", "samples:full-image.000001"])
def test_include_query_false_changes_nothing_but_the_query_column(fixtures_dir, name) -> None:
    """MySQL 8 ROWS_QUERY statements (apecloud) and MariaDB ANNOTATE_ROWS (our MariaDB 10.11 sample)."""
    path = str(SAMPLES / name.split(":", 1)[1]) if name.startswith("samples:") else str(
        fixtures_dir / "mysql-binlog" / name)
    full = spark_logsource.read("mysql-binlog", path, includeQuery="true")
    lean = spark_logsource.read("mysql-binlog", path, includeQuery="false")
    assert full.num_rows == lean.num_rows > 0
    assert spark_logsource.read("mysql-binlog", path).equals(lean), "includeQuery defaults to false"
    assert lean.column("query").null_count == lean.num_rows
    assert full.column("query").null_count < full.num_rows, "the file has statements logged with its rows"
    assert full.drop_columns(["query"]).equals(lean.drop_columns(["query"]))
