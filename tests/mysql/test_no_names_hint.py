"""The hint for binlogs whose rows carry no column names: once per source (not per table, file or read), naming
the fix (``view=table``)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

import spark_logsource

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mysql-binlog" / "apecloud"


def test_no_names_hint_is_logged_once_per_source_and_names_view_table(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    source = tmp_path / "binlogs"  # a directory of its own: the hint is remembered per source in this process
    shutil.copytree(FIXTURES, source)
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        first = spark_logsource.read("mysql-binlog", str(source))
        again = spark_logsource.read("mysql-binlog", str(source))  # a second action on the same source
    assert first.num_rows == again.num_rows > 0
    hints = [r.getMessage() for r in caplog.records if "carry no column names" in r.getMessage()]
    assert len(hints) == 1, hints
    assert "view=table" in hints[0] and str(source) in hints[0]
    assert "binlog_row_metadata" not in hints[0]  # MySQL 5.x has no such variable: not the fix to name
