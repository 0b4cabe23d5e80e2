"""A Spark batch read uses the format its data source parsed for ``schema()``: the driver's planning (a typed
view's DDL walk, a live server's binlog dump) happens once, so the schema Spark was given is the one the read
produces, even when a DDL lands between the two calls. docs/spark-speed.md says why the Spark read keeps the
format's ``batchSize`` (8192) rather than a larger one of its own."""

from __future__ import annotations

from typing import Any

import pytest

from spark_logsource.mysql.table import rows as table_rows
from spark_logsource.spark.base import LogReader
from spark_logsource.spark.sources import data_source
from tests.support.mysql_events import FIXTURE_DIR


def test_a_batch_read_plans_the_typed_view_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []
    original = table_rows.TableView.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(table_rows.TableView, "__init__", counting)
    source = data_source("mysql-binlog")({"path": str(FIXTURE_DIR / "osheroff" / "mysql-bin.sakila.gz"),
                                          "view": "table", "table": "sakila.actor"})
    source.schema()
    reader = source.reader(source.schema())
    assert isinstance(reader, LogReader) and reader.fmt is source._fmt
    assert list(reader.partitions())
    assert len(built) == 1
