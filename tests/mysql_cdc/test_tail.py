"""``view=table`` in a ``mysql-binlog`` directory stream (no Spark: the LogStream calls Spark makes): a RENAME
COLUMN stops the stream after everything before it, a restart goes on exactly once, TRUNCATE is a row, ``seq``
orders the changes across rotations, and a statement the parser cannot read stops naming it."""

from __future__ import annotations

from typing import Any

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.streaming.stream import ReadBudget, offset_json
from tests.mysql_cdc.conftest import drive
from tests.mysql_stream.conftest import StreamServer
from tests.support.mysql_cdc import TableWriter, assert_same_table, create_table, rebuild, server_rows


def _stream(server: StreamServer, table: str, **options: Any) -> Any:
    opts = {"view": "table", "table": table, "startingPosition": "earliest", **options}
    return make_format("mysql-binlog", str(server.binlog_dir), opts).stream()


def _closed_binlogs(server: StreamServer) -> list[str]:
    server.flush_logs()
    return [str(p) for p in server.binlog_files()[:-1]]


def test_rename_column_stops_and_restart_goes_on_exactly_once(cdc_server: StreamServer) -> None:
    create_table(cdc_server, "cdc.r")
    writer = TableWriter(cdc_server, "cdc.r")
    writer.transactions(40)
    stream = _stream(cdc_server, "cdc.r")
    rows1, offset1, error = drive(stream, stream.initial_offset())
    assert error is None and len(rows1) > 40
    assert offset1["table"]["layout"]["columns"][1]["name"] == "name"

    cdc_server.execute("ALTER TABLE cdc.r RENAME COLUMN name TO label")
    writer.transactions(30, column="label")
    rows2, offset2, error = drive(stream, offset1)
    assert error is not None
    message = str(error)
    assert "schema change" in message and "RENAME COLUMN name TO label" in message and "restart" in message
    alter_file, alter_pos = error.position.split(":")
    assert offset2["file"] == alter_file and offset2["pos"] < int(alter_pos)
    # every row before the ALTER was committed, none after it
    before_alter = rows1 + rows2
    assert all(r["after"] is None or r["after"]["name"] is not None for r in before_alter)

    restarted = _stream(cdc_server, "cdc.r")
    assert "label" in restarted.schema().field("after").type.names
    rows3, offset3, error = drive(restarted, offset2)
    assert error is None and rows3
    assert offset3["table"]["layout"]["columns"][1]["name"] == "label"
    renamed = [r for r in rows3 if r["op"] in ("c", "u")]
    assert renamed and all(r["after"]["label"] is not None and r["after"]["name"] is None for r in renamed)

    streamed = rows1 + rows2 + rows3
    seqs = [r["seq"] for r in streamed]
    assert len(set(seqs)) == len(seqs)  # exactly once
    batch = spark_logsource.read("mysql-binlog", _closed_binlogs(cdc_server), view="table",
                                 table="cdc.r").to_pylist()
    assert sorted(seqs) == sorted(r["seq"] for r in batch)  # the same changes as the batch view
    # a row last written before the rename has its text under the old name
    table = {k: {**r, "label": r.get("label") or r.get("name")} for k, r in rebuild(streamed).items()}
    assert_same_table(table, server_rows(cdc_server, "cdc.r"))


def test_truncate_is_a_row_and_seq_increases_across_rotations(cdc_server: StreamServer) -> None:
    create_table(cdc_server, "cdc.s")
    writer = TableWriter(cdc_server, "cdc.s", seed=3)
    writer.transactions(5)
    cdc_server.flush_logs()
    writer.transactions(5)
    cdc_server.execute("TRUNCATE TABLE cdc.s")
    cdc_server.flush_logs()
    writer.transactions(5)
    stream = _stream(cdc_server, "cdc.s")
    rows, _offset, error = drive(stream, stream.initial_offset(), ReadBudget(max_bytes=500))
    assert error is None
    files = [r["source"]["file"] for r in rows]
    assert len(set(files)) >= 3
    truncates = [r for r in rows if r["op"] == "t"]
    assert len(truncates) == 1
    t = truncates[0]
    assert t["before"] is None and t["after"] is None and t["source"]["table"] == "s" and t["seq"] is not None
    seqs = [r["seq"] for r in rows]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # strictly increasing in log order
    assert rebuild(rows).keys() == server_rows(cdc_server, "cdc.s").keys()
    batch = spark_logsource.read("mysql-binlog", _closed_binlogs(cdc_server), view="table",
                                 table="cdc.s").to_pylist()
    assert [r["op"] for r in batch].count("t") == 1


def test_unreadable_ddl_stops_naming_statement_and_position(cdc_server: StreamServer) -> None:
    create_table(cdc_server, "cdc.u")
    writer = TableWriter(cdc_server, "cdc.u", seed=5)
    writer.transactions(5)
    stream = _stream(cdc_server, "cdc.u")
    rows, offset, error = drive(stream, stream.initial_offset())
    assert error is None and rows
    statement = "ALTER TABLE cdc.u ADD COLUMN (c1 INT, c2 INT)"  # a syntax the parser rejects
    cdc_server.execute(statement)
    writer.transactions(3)
    more, stopped_at, error = drive(stream, offset)
    assert error is not None
    assert statement in str(error) and f"{error.position}" in str(error) and "guess" in str(error)
    assert more == []
    again = _stream(cdc_server, "cdc.u")
    _rows, _offset, error = drive(again, stopped_at)
    assert error is not None and statement in str(error)  # a restart does not step over it


def test_drop_column_does_not_stop(cdc_server: StreamServer) -> None:
    create_table(cdc_server, "cdc.d")
    writer = TableWriter(cdc_server, "cdc.d", seed=9)
    writer.transactions(5)
    stream = _stream(cdc_server, "cdc.d")
    rows, offset, error = drive(stream, stream.initial_offset())
    assert error is None and any(r["after"] and r["after"]["flag"] is not None for r in rows)
    cdc_server.execute("ALTER TABLE cdc.d DROP COLUMN flag")
    cdc_server.execute("INSERT INTO cdc.d (id, name, amount) VALUES (5000, 'after-drop', 2.00)")
    more, offset, error = drive(stream, offset)
    assert error is None, error
    assert [r["after"]["name"] for r in more] == ["after-drop"] and more[0]["after"]["flag"] is None
    assert [c["name"] for c in offset["table"]["layout"]["columns"]] == ["id", "name", "amount", "at", "big"]


def test_python_reference_path_gives_the_same_rows(cdc_server: StreamServer, monkeypatch: Any) -> None:
    create_table(cdc_server, "cdc.k")
    TableWriter(cdc_server, "cdc.k", seed=13).transactions(15)
    stream = _stream(cdc_server, "cdc.k")
    start = stream.initial_offset()
    kernel_rows, end, error = drive(stream, start)
    assert error is None and len(kernel_rows) > 15
    import spark_logsource.mysql.table.rows as rows_module

    monkeypatch.setattr(rows_module, "kernel_available", lambda: False)
    python_stream = _stream(cdc_server, "cdc.k")
    python_rows, python_end, error = drive(python_stream, start)
    assert error is None
    # MariaDB may append an event of no row between the two reads (its binlog checkpoint, written asynchronously
    # after a commit): both streams read on from where they stopped until they stop at the same boundary, and no
    # row of the table may come in between.
    for _ in range(5):
        if offset_json(python_end) == offset_json(end):
            break
        more, end, error = drive(stream, end)
        more_python, python_end, python_error = drive(python_stream, python_end)
        assert more == more_python == [] and error is None and python_error is None
    assert python_end == end
    assert python_rows == kernel_rows
