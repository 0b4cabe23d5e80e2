"""``view=table`` against the real MariaDB: every image equals the server's own SELECT at that moment.

The workload (``conftest.py``) changes the table's layout between DML statements; each DML statement is one
transaction whose GTID the workload recorded, so the row's ``source.gtid`` says which SELECT it must match: the
``after`` image the table right after the statement, the ``before`` image the table right before it. Replaying
c / u / d by primary key must give ``SELECT * FROM`` the table at the end.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError, OptionError
from tests.support.mysql_typed import DB, FINAL_TABLE, TypedWorkload, count_kernel_events
from tests.support.twins import activate

TABLE = f"{DB}.{FINAL_TABLE}"


def _read(files: list[Path], **options: Any) -> list[dict[str, Any]]:
    table = spark_logsource.read("mysql-binlog", [str(f) for f in files], view="table", table=TABLE, **options)
    return table.to_pylist()


def _time(text: str) -> dt.timedelta:
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    return sign * dt.timedelta(hours=int(h), minutes=int(m), seconds=float(Decimal(s)))


def _same(column: str, ours: Any, server: Any) -> bool:
    """A cell of view=table against pymysql's value of the same column (the server's text protocol)."""
    if server is None or ours is None:
        return server is None and ours is None
    if isinstance(server, dt.timedelta):  # TIME: ours is the server's own text
        return _time(ours) == server
    if isinstance(ours, dt.datetime) and ours.tzinfo is not None:  # TIMESTAMP: the session's time zone is UTC
        return ours.replace(tzinfo=None) == server
    if isinstance(ours, float) and column == "f":  # FLOAT: the server prints the float32 rounded
        return np.float32(ours) == np.float32(server)
    if isinstance(ours, dict) and set(ours) == {"value", "metadata"}:  # JSON as variant
        return decode_variant(ours["value"], ours["metadata"]) == json.loads(server, parse_float=Decimal)
    return bool(ours == server)


def _check_image(ours: dict[str, Any], server: dict[str, Any], where: str) -> None:
    for column, value in ours.items():
        if column not in server:
            assert value is None, f"{where}: {column} is not a column at that moment, but holds {value!r}"
        else:
            assert _same(column, value, server[column]), f"{where}: {column}: {value!r} != server {server[column]!r}"
    assert set(server) <= set(ours), f"{where}: columns missing from the view: {set(server) - set(ours)}"


def check_against_server(rows: list[dict[str, Any]], workload: TypedWorkload, first_step: int = 0) -> int:
    """Every row of view=table against the snapshots; returns the number of rows checked."""
    steps = {s.gtid: s.step for s in workload.snapshots if s.gtid is not None}
    snapshots = workload.snapshots
    seen: dict[int, set[int]] = {}
    for row in rows:
        assert row.get("_corrupt_record") is None, row["_corrupt_record"]
        step = steps[row["source"]["gtid"]]
        where = f"step {step} {row['op']} at {row['source']['pos']}"
        keys = seen.setdefault(step, set())
        if row["op"] in ("u", "d"):
            _check_image(row["before"], snapshots[step - 1].rows[row["before"]["id"]], where + " before")
            keys.add(row["before"]["id"])
        else:
            assert row["before"] is None
        if row["op"] in ("c", "u"):
            _check_image(row["after"], snapshots[step].rows[row["after"]["id"]], where + " after")
            keys.add(row["after"]["id"])
        else:
            assert row["after"] is None
    for snap in snapshots[max(first_step, 1):]:
        if snap.gtid is None:
            continue
        before = snapshots[snap.step - 1].rows
        changed = {k for k in set(before) | set(snap.rows) if before.get(k) != snap.rows.get(k)}
        assert seen.get(snap.step, set()) == changed, f"step {snap.step}: rows of the view vs rows changed"
    return len(rows)


def _set_cells(row: dict[str, Any]) -> dict[str, Any]:
    images = {k: None if row[k] is None else {c: v for c, v in row[k].items() if v is not None}
              for k in ("before", "after")}
    return {**row, **images}


def replay(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row["op"] in ("u", "d"):
            del state[row["before"]["id"]]
        if row["op"] in ("c", "u"):
            state[row["after"]["id"]] = row["after"]
    return state


@pytest.mark.parametrize("metadata", ["NO_LOG", "MINIMAL", "FULL"])
def test_schema_from_binlog_equals_server(typed_workloads: dict[str, TypedWorkload], metadata: str) -> None:
    w = typed_workloads[metadata]
    rows = _read(w.files)  # schemaFrom=binlog is the default
    assert check_against_server(rows, w) == 19
    assert [r["source"]["table"] for r in rows][-1] == FINAL_TABLE and rows[0]["source"]["table"] == "orders"
    state = replay(rows)
    assert set(state) == set(w.final.rows)
    for key, image in state.items():
        _check_image(image, w.final.rows[key], f"final row {key}")


def test_splits_read_the_same_rows(typed_workloads: dict[str, TypedWorkload]) -> None:
    """Files cut into many byte-range splits: each row is read once, named as in the whole-file read."""
    w = typed_workloads["MINIMAL"]
    fmt = make_format("mysql-binlog", [str(f) for f in w.files],
                      {"view": "table", "table": TABLE, "maxPartitionBytes": "2k"})
    splits = fmt.plan(fmt.list_files())
    assert len(splits) > 2 * len(w.files)
    rows = [r for s in splits for b in fmt.read_split(s) for r in b.to_pylist()]
    assert rows == _read(w.files)


def test_schema_from_metadata_equals_server(typed_workloads: dict[str, TypedWorkload]) -> None:
    w = typed_workloads["FULL"]
    rows = _read(w.files, schemaFrom="metadata")
    assert check_against_server(rows, w) == 19
    state = replay(rows)
    assert set(state) == set(w.final.rows)
    for key, image in state.items():
        _check_image(image, w.final.rows[key], f"final row {key}")


def test_metadata_needs_full_row_metadata(typed_workloads: dict[str, TypedWorkload]) -> None:
    with pytest.raises(OptionError, match="binlog_row_metadata=FULL"):
        _read(typed_workloads["MINIMAL"].files, schemaFrom="metadata")


@pytest.mark.parametrize("metadata", ["MINIMAL", "FULL"])
def test_schema_from_ddl_file(typed_workloads: dict[str, TypedWorkload], metadata: str) -> None:
    w = typed_workloads[metadata]
    with pytest.raises(OptionError, match="no CREATE TABLE"):
        _read(w.later_files)  # the CREATE is in an earlier binlog
    rows = _read(w.later_files, schemaFrom=f"ddl:{w.ddl_file}")
    assert check_against_server(rows, w, first_step=7) == 8
    whole = [r for r in _read(w.files) if r["source"]["file"] in {str(f) for f in w.later_files}]
    # the same rows as the read of every binlog, whose union schema also has the columns dropped earlier
    assert [_set_cells(r) for r in rows] == [_set_cells(r) for r in whole]


def test_rows_no_layout_names_are_errors(typed_workloads: dict[str, TypedWorkload], tmp_path: Path) -> None:
    w = typed_workloads["MINIMAL"]
    # the right table plus a column it does not have: the TABLE_MAPs disagree with every layout replayed from it
    wrong = tmp_path / "wrong.sql"
    wrong.write_text(w.ddl_file.read_text().replace("PRIMARY KEY (`id`)", "`zz` INT, PRIMARY KEY (`id`)"))
    with pytest.raises(CorruptDataError, match="columns, the layout in force has"):
        _read(w.later_files, schemaFrom=f"ddl:{wrong}", mode="FAILFAST")
    rows = _read(w.later_files, schemaFrom=f"ddl:{wrong}")
    good = _read(w.later_files, schemaFrom=f"ddl:{w.ddl_file}")
    assert len(rows) == len({r["source"]["pos"] for r in good})  # one error row per rows event
    for row in rows:
        assert row["op"] is None and row["after"] is None and row["before"] is None
        assert "columns, the layout in force has" in row["_corrupt_record"]
        assert row["source"]["pos"] in {r["source"]["pos"] for r in good}
    assert _read(w.later_files, schemaFrom=f"ddl:{wrong}", mode="DROPMALFORMED") == []


def test_options_are_checked(typed_workloads: dict[str, TypedWorkload]) -> None:
    files = [str(f) for f in typed_workloads["FULL"].files]
    for options, match in (({"view": "table"}, "needs the option table"),
                           ({"view": "table", "table": "typed.*"}, "one table"),
                           ({"view": "table", "table": "orders2"}, "db.table"),
                           ({"view": "table", "table": TABLE, "schemaFrom": "json"}, "schemaFrom|expected"),
                           ({"table": TABLE}, "view=table only"),
                           ({"view": "table", "table": "typed.nope"}, "no CREATE TABLE typed.nope")):
        with pytest.raises(OptionError, match=match):
            spark_logsource.read("mysql-binlog", files, **options)


def test_values_a_column_cannot_hold_are_errors(mariadb: Any, tmp_path: Path) -> None:
    """A zero date (allowed by an empty sql_mode) has no Spark date: that row is an error, its neighbours are not."""

    def workload(server: Any) -> None:
        server.execute("SET sql_mode = ''")
        server.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        server.execute(f"CREATE OR REPLACE TABLE {DB}.zero (id INT PRIMARY KEY, d DATE)")
        server.execute(f"INSERT INTO {DB}.zero VALUES (1, '2020-02-29'), (2, '0000-00-00'), (3, NULL)")

    files = [str(f) for f in mariadb.run_workload(workload, dest=tmp_path)]
    rows = spark_logsource.read("mysql-binlog", files, view="table", table=f"{DB}.zero").to_pylist()
    assert [(r["op"], r["after"]) for r in rows] == [
        ("c", {"id": 1, "d": dt.date(2020, 2, 29)}), (None, None), ("c", {"id": 3, "d": None})]
    assert "'0000-00-00' is not a date Spark can hold" in rows[1]["_corrupt_record"]
    assert rows[1]["source"]["row_index"] == 1 and rows[1]["source"]["pos"] == rows[0]["source"]["pos"]
    with pytest.raises(CorruptDataError, match="0000-00-00"):
        spark_logsource.read("mysql-binlog", files, view="table", table=f"{DB}.zero", mode="FAILFAST")


def test_declarations_the_binlog_disagrees_with(mariadb: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A DDL file that declares what the server did not write: DECIMAL(38,1) for a DECIMAL(38,0) column, JSON for a
    LONGTEXT holding text that is not JSON. A value the declaration cannot hold is an error row, never a wrapped or
    guessed value; the compiled path gives the reference's batches, and a bad value late in a run of rows events
    costs a few kernel calls, not one per event."""

    def workload(server: Any) -> None:
        server.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        server.execute(f"CREATE OR REPLACE TABLE {DB}.dm (id INT PRIMARY KEY, v DECIMAL(38,0))")
        server.execute(f"CREATE OR REPLACE TABLE {DB}.js (id INT PRIMARY KEY, doc LONGTEXT)")
        server.flush_logs()
        server.execute(f"INSERT INTO {DB}.dm VALUES (1, 5), (2, {3 * 10**37}), (3, NULL), (4, -7)")
        # one INSERT of 3000 rows: many rows events of the table back to back (a run); row 2500 is not JSON
        docs = ", ".join(f"({i}, '{{\"n\": {i}}}')" if i != 2500 else f"({i}, 'not json')" for i in range(3000))
        server.execute(f"INSERT INTO {DB}.js VALUES {docs}")

    files = mariadb.run_workload(workload, dest=tmp_path)
    later = [str(f) for f in files[1:]]  # after the rotation: no CREATE TABLE, the DDL file names the rows
    ddl = tmp_path / "declared.sql"
    ddl.write_text(f"CREATE TABLE {DB}.dm (id INT PRIMARY KEY, v DECIMAL(38,1));\n"
                   f"CREATE TABLE {DB}.js (id INT PRIMARY KEY, doc JSON);\n")

    def batches(table: str, kernel: bool, counts: list[tuple[str, bool]] | None = None) -> list[Any]:
        with monkeypatch.context() as patch:
            activate("c" if kernel else "python", patch)
            if counts is not None:
                count_kernel_events(patch, counts)
            return list(spark_logsource.iter_batches("mysql-binlog", later, view="table", table=f"{DB}.{table}",
                                                     schemaFrom=f"ddl:{ddl}"))

    decimals = [r for b in batches("dm", True) for r in b.to_pylist()]
    assert [(r["op"], r["after"]) for r in decimals] == [
        ("c", {"id": 1, "v": Decimal("5.0")}), (None, None), ("c", {"id": 3, "v": None}),
        ("c", {"id": 4, "v": Decimal("-7.0")})]
    assert "does not fit DECIMAL(38,1)" in decimals[1]["_corrupt_record"]
    counts: list[tuple[str, bool]] = []
    docs = batches("js", True, counts)
    rows = [r for b in docs for r in b.to_pylist()]
    assert len(rows) == 3000 and [r["source"]["row_index"] is not None for r in rows].count(True) == 3000
    bad = [r for r in rows if r["_corrupt_record"] is not None]
    assert len(bad) == 1 and "is not JSON" in bad[0]["_corrupt_record"] and rows.index(bad[0]) == 2500
    events = len({r["source"]["pos"] for r in rows})
    assert events >= 4  # the INSERT is several rows events
    # the bad value's event declined once, every other event read once, in a run
    assert counts.count(("one", False)) == 1 and len(counts) == events
    assert ("one", True) not in counts
    for table, ours in (("dm", batches("dm", True)), ("js", docs)):
        reference = batches(table, False)
        assert [b.num_rows for b in ours] == [b.num_rows for b in reference]
        assert all(a.equals(b) for a, b in zip(ours, reference, strict=True)), table


def test_schema_from_server_names_rows_that_agree(mariadb: Any, typed_workloads: dict[str, TypedWorkload],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """schemaFrom=mysql://…: the server's layout today names the rows whose TABLE_MAP agrees with it (those written
    after the last change of a column's type or name); earlier rows are error rows, with a warning."""
    w = typed_workloads["FULL"]  # the last workload run: the server's typed.orders2 is its final table
    mariadb.execute("CREATE USER IF NOT EXISTS 'typed_reader'@'%' IDENTIFIED BY 'pw'")
    mariadb.execute(f"GRANT SELECT ON {DB}.* TO 'typed_reader'@'%'")
    uri = f"mysql://typed_reader@127.0.0.1:{mariadb.port}"
    with pytest.raises(OptionError, match="password"):
        _read(w.files, password="pw")  # a password without a server
    with caplog.at_level("WARNING"):
        rows = _read(w.files, schemaFrom=uri, password="pw")
    good = [r for r in rows if r["_corrupt_record"] is None]
    bad = [r for r in rows if r["_corrupt_record"] is not None]
    assert check_against_server(good, w, first_step=10) == 8  # steps 10 on: after MODIFY si INT
    assert len(bad) == 5 and rows.index(bad[-1]) < rows.index(good[0])  # one per rows event of steps 0 to 6
    assert all("the layout in force" in r["_corrupt_record"] for r in bad)
    assert "the server's layout today" in caplog.text
    assert "pw" not in repr(make_format("mysql-binlog", [str(f) for f in w.files],
                                        {"view": "table", "table": TABLE, "schemaFrom": uri, "password": "pw"})
                            .table_options)


def test_kernel_and_column_wise_equal_row_by_row(typed_workloads: dict[str, TypedWorkload],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Three paths make view=table's batches: the kernel's typed columns, the Python reference column by column,
    and row by row (taken when a value does not fit its column). They must give the very same batches, on every
    workload and with batches cut mid-event; and each path must really have been taken."""
    from spark_logsource.mysql.table import rows as typed_rows

    def batches(files: list[Path], **options: Any) -> list[Any]:
        return list(spark_logsource.iter_batches("mysql-binlog", [str(f) for f in files], view="table",
                                                 table=TABLE, **options))

    kernel_events: list[tuple[str, bool]] = []
    row_by_row: list[tuple] = []

    def never(*args: Any, **kwargs: Any) -> None:
        row_by_row.append(args)
        raise typed_rows.ValueMismatch("forced: row by row")

    for name, w in typed_workloads.items():
        for options in ({}, {"batchSize": "3"}, {"schemaFrom": "metadata"} if name == "FULL" else {}):
            kernel_events.clear()
            row_by_row.clear()
            with monkeypatch.context() as patch:
                activate("c", patch)
                count_kernel_events(patch, kernel_events)
                fast = batches(w.files, **options)
            with monkeypatch.context() as patch:
                activate("python", patch)
                python = batches(w.files, **options)
                patch.setattr(typed_rows, "_image_columns", never)
                slow = batches(w.files, **options)
            assert row_by_row, "the row-by-row path was not taken"
            # every rows event of the workload converts in the kernel (its zero values are in another test)
            assert kernel_events and all(ok for _how, ok in kernel_events), (name, options, kernel_events)
            assert sum(len(b) for b in fast) > 0
            for other in (python, slow):
                assert [b.num_rows for b in fast] == [b.num_rows for b in other], (name, options)
                for a, b in zip(fast, other, strict=True):
                    assert a.equals(b), (name, options, a.to_pylist()[:2], b.to_pylist()[:2])


def test_image_columns_refuse_images_of_different_columns() -> None:
    """Images that do not share one key set are not converted column by column (the row-by-row path takes them),
    so no cell is dropped; images that do share it keep their nulls and their absent rows."""
    from spark_logsource.mysql.table.rows import NotColumnWise, _image_columns

    cells = {"@1": ("id", int), "@2": ("name", str)}
    with pytest.raises(NotColumnWise):
        _image_columns([{"@1": 1}, {"@1": 2, "@2": "extra"}], cells)
    with pytest.raises(NotColumnWise):
        _image_columns([{"@1": 1, "@2": "a"}, {"@1": 2, "@3": "b"}], cells)
    columns, size = _image_columns([{"@1": 1, "@2": "ab"}, None, {"@1": 3, "@2": None}], cells)
    assert columns == ({"id": [1, None, 3], "name": ["ab", None, None]}, [True, False, True]) and size == 2
    assert _image_columns([None, None], cells) == (None, 0)


@pytest.mark.parametrize("metadata", ["NO_LOG", "FULL"])
def test_a_damaged_rows_event_is_reported_by_the_read(typed_workloads: dict[str, TypedWorkload], tmp_path: Path,
                                                      metadata: str) -> None:
    """The driver's DDL pass steps over rows events by their headers (no CRC): a byte flipped inside one must still
    be reported, by the read, naming the file and the event's offset; every other row is kept."""
    w = typed_workloads[metadata]
    options = {"schemaFrom": "metadata"} if metadata == "FULL" else {}
    good = _read(w.files, **options)
    pos, file = good[len(good) // 2]["source"]["pos"], good[len(good) // 2]["source"]["file"]
    files = []
    for f in w.files:
        data = f.read_bytes()
        if str(f) == file:
            at = pos + 19 + 10  # a byte inside the rows event's body
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
        files.append(tmp_path / f.name)
        files[-1].write_bytes(data)
    damaged = str(tmp_path / Path(file).name)
    fmt = make_format("mysql-binlog", [str(f) for f in files],
                      {"view": "table", "table": TABLE, "mode": "FAILFAST", **options})
    assert fmt.table_view().history is not None  # the plan does not read that body
    with pytest.raises(CorruptDataError, match="CRC32") as failed:
        _read(files, mode="FAILFAST", **options)
    assert (failed.value.path, failed.value.offset) == (damaged, pos)
    rows = _read(files, **options)
    [bad] = [r for r in rows if r["_corrupt_record"] is not None]
    assert damaged in bad["_corrupt_record"] and str(pos) in bad["_corrupt_record"]
    kept = [r for r in good if (r["source"]["file"], r["source"]["pos"]) != (file, pos)]
    assert len(kept) < len(good)
    assert [_set_cells(r) for r in rows if r is not bad] == [
        _set_cells({**r, "source": {**r["source"], "file": str(tmp_path / Path(r["source"]["file"]).name)}})
        for r in kept]
