"""``view=state`` over real MariaDB binlogs equals the server's ``SELECT *`` at the end and at a middle point."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spark_logsource
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError, OptionError
from tests.mysql_state.conftest import DB, StateWorkload, as_utc
from tests.support.mysql_typed import DB as TYPED_DB
from tests.support.mysql_typed import FINAL_TABLE, TypedWorkload


def _time(text: str) -> dt.timedelta:
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    return sign * dt.timedelta(hours=int(h), minutes=int(m), seconds=float(Decimal(s)))


def same(column: str, ours: Any, server: Any) -> bool:
    """A cell of view=state against pymysql's value of the same column (the server's text protocol)."""
    if server is None or ours is None:
        return server is None and ours is None
    if isinstance(server, dt.timedelta):  # TIME: ours is the server's own text
        return bool(_time(ours) == server)
    if isinstance(ours, dt.datetime) and ours.tzinfo is not None:  # TIMESTAMP: the session's time zone is UTC
        return bool(ours.replace(tzinfo=None) == server)
    if isinstance(ours, float) and column == "f":  # FLOAT: the server prints the float32 rounded
        return bool(np.float32(ours) == np.float32(server))
    if isinstance(ours, dict) and set(ours) == {"value", "metadata"}:  # JSON as variant
        return bool(decode_variant(ours["value"], ours["metadata"]) == json.loads(server, parse_float=Decimal))
    if isinstance(ours, Decimal) and isinstance(server, int):  # BIGINT UNSIGNED is a decimal(20,0)
        return bool(ours == server)
    return bool(ours == server) and type(ours) is type(server)


def assert_same_rows(ours: list[dict[str, Any]], server: list[dict[str, Any]], where: str) -> None:
    """Equal as multisets of rows, column by column (the row order of a state is not defined)."""
    assert len(ours) == len(server), f"{where}: {len(ours)} rows, the server has {len(server)}"
    left = list(server)
    for row in ours:
        assert list(row) == list(left[0]), f"{where}: columns {list(row)} != server {list(left[0])}"
        match = next((i for i, s in enumerate(left) if all(same(c, row[c], s[c]) for c in row)), None)
        assert match is not None, f"{where}: {row} is not a row of the server's {left}"
        del left[match]


def read_state(files: list[Path], table: str, **options: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = spark_logsource.read("mysql-binlog", [str(f) for f in files], view="state",
                                                      table=f"{DB}.{table}", **options).to_pylist()
    return rows


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in rows:
        assert r.pop("_corrupt_record") is None
    return rows


@pytest.mark.parametrize("parts", [1, 3, None])
@pytest.mark.parametrize("table", ["items", "tally", "gone"])
def test_state_at_the_end_equals_select(state_workload: StateWorkload, table: str, parts: int | None) -> None:
    w = state_workload
    assert w.final is not None
    options = {} if parts is None else {"statePartitions": parts}
    ours = _strip(read_state(w.files, table, **options))
    assert_same_rows(ours, w.final.tables[table], f"{table} at the end")
    assert len(ours) > 0


def test_the_replay_saw_what_the_test_wrote(state_workload: StateWorkload) -> None:
    """The workload does what the asserts rely on: a key change, a multiset, rows of a column added later."""
    w = state_workload
    assert w.middle is not None and w.final is not None
    assert {(r["region"], r["id"]) for r in w.middle.tables["items"]} >= {("jp", 500)}
    assert ("eu", 5) in {(r["region"], r["id"]) for r in w.final.tables["items"]}
    assert [(r["k"], r["tag"]) for r in w.middle.tables["tally"]].count((1, "a")) == 1
    assert [(r["k"], r["label"]) for r in w.final.tables["tally"]].count((2, "b")) == 2
    notes = [r["note"] for r in w.final.tables["items"]]
    assert None in notes and "fresh" in notes
    assert w.final.tables["gone"] == [{"id": 7, "v": None}]
    assert "note" not in w.middle.tables["items"][0]
    titles = [r["title"] for r in w.final.tables["items"]]
    assert "renamed" in titles and "item 1 é+" in titles  # rows not changed after the rename keep their values


@pytest.mark.parametrize("how", ["position", "gtid", "time"])
@pytest.mark.parametrize("table", ["items", "tally", "gone"])
def test_state_as_of_the_middle_equals_select_then(state_workload: StateWorkload, how: str, table: str) -> None:
    w = state_workload
    m = w.middle
    assert m is not None
    as_of = {"position": f"{m.file}:{m.pos}", "gtid": m.gtid, "time": as_utc(m.clock)}[how]
    ours = _strip(read_state(w.files, table, asOf=as_of, statePartitions=2))
    assert_same_rows(ours, m.tables[table], f"{table} asOf {as_of}")


def test_as_of_an_iso_time_with_an_offset(state_workload: StateWorkload) -> None:
    m = state_workload.middle
    assert m is not None
    local = dt.datetime.fromtimestamp(m.clock, dt.timezone(dt.timedelta(hours=2))).isoformat()
    assert_same_rows(_strip(read_state(state_workload.files, "items", asOf=local)), m.tables["items"], local)


def test_every_type_through_renames_and_drops(typed_no_log: TypedWorkload) -> None:
    """The every-type workload of view=table (ADD, DROP, CHANGE, RENAME COLUMN, MODIFY, RENAME TABLE; every row
    updated after the last DDL): the state's columns are the final layout's, its values the final SELECT's."""
    w = typed_no_log
    table = spark_logsource.read("mysql-binlog", [str(f) for f in w.files], view="state",
                                 table=f"{TYPED_DB}.{FINAL_TABLE}")
    assert table.column_names == [*w.final.columns, "_corrupt_record"]
    ours = _strip(table.to_pylist())
    assert_same_rows(ours, list(w.final.rows.values()), "typed.orders2")
    # as of the step before the rename of vc to label: the columns then, the rows then
    step = next(s for s in w.snapshots if s.gtid is not None and s.step == 6)
    before = spark_logsource.read("mysql-binlog", [str(f) for f in w.files], view="state",
                                  table=f"{TYPED_DB}.{FINAL_TABLE}", asOf=f"{step.gtid},")
    assert before.column_names == [*step.columns, "_corrupt_record"]
    assert_same_rows(_strip(before.to_pylist()), list(step.rows.values()), "typed.orders asOf step 6")


def test_rows_that_cannot_be_named_are_error_rows(state_workload: StateWorkload, tmp_path: Path) -> None:
    """A layout that disagrees with the binlog (fewer columns): each rows event of the table is one error row,
    emitted once whatever the partitions; FAILFAST raises."""
    ddl = tmp_path / "wrong.sql"
    ddl.write_text(f"CREATE TABLE {DB}.items (id INT NOT NULL, region CHAR(2) NOT NULL, name VARCHAR(40), "
                   "seen DATETIME(6), PRIMARY KEY (region, id));\n")
    later = state_workload.files[1:]  # after the rotation: no CREATE TABLE of their own
    files = [str(f) for f in later]
    changes = spark_logsource.read("mysql-binlog", files, view="table", table=f"{DB}.items",
                                   schemaFrom=f"ddl:{ddl}").to_pylist()
    errors = [r["_corrupt_record"] for r in changes if r["op"] is None]
    assert any("have 10 columns, the layout in force has 5" in e for e in errors)
    rows = read_state(later, "items", schemaFrom=f"ddl:{ddl}", statePartitions=3)
    assert [r["_corrupt_record"] for r in rows] == errors
    assert all(r["id"] is None and r["region"] is None for r in rows)
    with pytest.raises(CorruptDataError, match="columns"):
        read_state(later, "items", schemaFrom=f"ddl:{ddl}", mode="FAILFAST")


@pytest.mark.parametrize(("options", "match"), [
    ({"asOf": "yesterday"}, "expected a file:pos"),
    ({"asOf": "mysql-bin.999999:4"}, "no binlog 'mysql-bin.999999' among the files read"),
    ({"asOf": "2024-05-01"}, "both a date and a GTID"),
    ({"asOf": "3f1c0e5e-0000-11ef-9c2a-0242ac120002:1-5"}, "no transaction of the binlogs read has a GTID"),
    ({"asOf": "2001-01-01 00:00:00"}, "no known layout as of asOf=2001-01-01 00:00:00"),
    ({"schemaFrom": "metadata"}, "primary key"),
    ({"ops": "insert"}, "does not apply to view=state"),
])
def test_bad_options_are_option_errors(state_workload: StateWorkload, options: dict[str, str], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        read_state(state_workload.files, "items", **options)


def test_state_options_belong_to_view_state(state_workload: StateWorkload) -> None:
    files = [str(f) for f in state_workload.files]
    with pytest.raises(OptionError, match="applies to view=state only"):
        spark_logsource.read("mysql-binlog", files, view="table", table=f"{DB}.items", asOf="0-1-1")
    with pytest.raises(OptionError, match="applies to view=state only"):
        spark_logsource.read("mysql-binlog", files, statePartitions=2)
    with pytest.raises(OptionError, match="view=state needs the option table"):
        spark_logsource.read("mysql-binlog", files, view="state")
