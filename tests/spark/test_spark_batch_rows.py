"""A Spark batch read uses the format its data source parsed for ``schema()``: the driver's planning (a typed
view's DDL walk, a live server's binlog dump) happens once, so the schema Spark was given is the one the read
produces, even when a DDL lands between the two calls. docs/spark-speed.md says why the Spark read keeps the
format's ``batchSize`` (8192) rather than a larger one of its own."""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
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


@pytest.mark.parametrize("view", ["table", "state"])
def test_a_batch_read_plans_once_across_spark_workers(monkeypatch: pytest.MonkeyPatch, view: str) -> None:
    """Spark's way: the data source built and asked its schema in one worker, pickled into the planning worker
    (``reader()``, ``partitions()``), the reader pickled into the tasks. The view (``view=state``: a
    :class:`~spark_logsource.mysql.table.state.StateView`, a TableView) is planned once, by the first of them, and
    the tasks' batches have the schema Spark was given. ``tests/mysql_state/test_plans_once.py`` counts the same on a
    live server (``mysql-replication``)."""
    built: list[Any] = []
    original = table_rows.TableView.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(table_rows.TableView, "__init__", counting)
    options = {"view": view, "table": "sakila.actor", **({"statePartitions": "2"} if view == "state" else {})}
    path = str(FIXTURE_DIR / "osheroff" / "mysql-bin.sakila.gz")
    source = data_source("mysql-binlog")({"path": path, **options})
    schema = source.schema()
    arrow_schema = source._fmt.schema()
    planner = pickle.loads(pickle.dumps(source))
    reader = planner.reader(schema)
    partitions = reader.partitions()
    task = pickle.loads(pickle.dumps(reader))
    batches = [b for p in pickle.loads(pickle.dumps(partitions)) for b in task.read(p)]
    assert len(built) == 1
    assert len(partitions) == (2 if view == "state" else 1)
    assert batches and all(b.schema == arrow_schema for b in batches)
    arrow = spark_logsource.read("mysql-binlog", [path], **options)
    assert sorted(map(repr, pa.Table.from_batches(batches).to_pylist())) == sorted(map(repr, arrow.to_pylist()))
