"""The snapshot of a live table, chunk by chunk, against the table as of the plan's position.

The oracle of the typed values is the binlog path: ``view=table`` over the server's binlog files, replayed by
primary key up to the plan's position, gives the table at T in the view's types. The oracle of which rows exist
is the server: a consistent snapshot the test opened at the plan's position and holds to the end."""

from __future__ import annotations

import logging
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.errors import AuthenticationError, SourceError
from spark_logsource.mysql.position import binlog_number
from spark_logsource.mysql.snapshot import plan_snapshot, read_chunk
from spark_logsource.mysql.snapshot.chunk import ROW_BITS
from spark_logsource.mysql.stream.client import ConnectionSettings, parse_uri
from tests.mysql_snapshot.conftest import (
    DB,
    INITIAL_ROWS,
    PASSWORD,
    TYPED_COLUMNS,
    TYPED_DDL,
    TYPED_TABLE,
    HeldSnapshot,
    TypedWriter,
    insert_sql,
    typed_values,
)


def _chunk_table(settings: ConnectionSettings, plan: Any, chunk: Any) -> pa.Table:
    return pa.Table.from_batches(list(read_chunk(settings, plan, chunk, batch_size=700)))


def _table_at(binlogs: list[Path], table: str, position: tuple[str, int]) -> tuple[dict[Any, dict[str, Any]], Any]:
    """The table as of ``position``, from ``view=table`` over the binlog files, replayed by primary key; and the
    view's ``after`` type."""
    view = spark_logsource.read("mysql-binlog", [str(p) for p in binlogs], view="table", table=table,
                                mode="FAILFAST")
    end = (binlog_number(position[0])[1], position[1])
    state: dict[Any, dict[str, Any]] = {}
    for row in view.to_pylist():
        source = row["source"]
        if (binlog_number(Path(source["file"]).name)[1], source["pos"]) >= end:
            continue
        if row["op"] in ("u", "d"):
            del state[row["before"]["id"]]
        if row["op"] in ("c", "u"):
            state[row["after"]["id"]] = row["after"]
    return state, view.schema.field("after").type


def test_chunks_under_a_writer_equal_the_table_at_the_position(snap_server: Any, settings: ConnectionSettings,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    snap_server.execute(f"DROP TABLE IF EXISTS {TYPED_TABLE}")
    snap_server.execute(TYPED_DDL)
    r = random.Random(5)
    keys = set(random.Random(1).sample(range(1, 6001), INITIAL_ROWS))
    with snap_server._conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.executemany(insert_sql(TYPED_TABLE, TYPED_COLUMNS), [typed_values(r, k) for k in sorted(keys)])
    with TypedWriter(snap_server, keys) as writer:
        writer.wait_for(20)
        with writer.lock:  # between two transactions: the held snapshot and the plan see the same position
            held = HeldSnapshot(snap_server)
            plan = plan_snapshot(settings, TYPED_TABLE, chunks=8)
        assert (plan.file, plan.pos) == held.position
        assert len(plan.chunks) == 8 and plan.key == (0,)
        tables = []
        for chunk in plan.chunks:
            writer.wait_for(writer.transactions + 15)  # every chunk reads at a later position than the plan
            if chunk.index == 4:
                snap_server.flush_logs()  # the windows of the later chunks span two binlog files
            tables.append(_chunk_table(settings, plan, chunk))
        writer.wait_for(writer.transactions + 30)
        again = [_chunk_table(settings, plan, plan.chunks[i]) for i in (0, 5)]
    snap_server.flush_logs()
    held_ids = sorted(row[0] for row in held.query(f"SELECT id FROM {TYPED_TABLE}"))
    held.close()

    # each chunk read at a later position than T, and so rolled back
    read_at = [rec.getMessage() for rec in caplog.records if "row(s) as of" in rec.getMessage()]
    assert len(read_at) == 10 and all(f"read at {plan.file}:{plan.pos})" not in m for m in read_at), read_at

    snapshot = pa.concat_tables(tables)
    rows = snapshot.to_pylist()
    ids = [row["after"]["id"] for row in rows]
    assert sorted(ids) == held_ids and len(set(ids)) == len(ids)

    expected, after_type = _table_at(snap_server.binlog_files(), TYPED_TABLE, (plan.file, plan.pos))
    assert snapshot.schema.field("after").type == after_type
    assert sorted(expected) == held_ids
    for row in rows:
        assert row["after"] == expected[row["after"]["id"]], row["after"]["id"]
    assert {row["op"] for row in rows} == {"r"} and all(row["before"] is None for row in rows)
    for chunk, table in zip(plan.chunks, tables, strict=True):
        base = plan.file_number * 2**64 + plan.pos * 2**32 + (chunk.index << ROW_BITS)
        for i, row in enumerate(table.to_pylist()):
            assert row["seq"] == Decimal(base + i)
            assert row["source"] == {"file": plan.file, "pos": plan.pos, "row_index": i, "timestamp": None,
                                     "server_id": 1, "gtid": plan.gtid, "xid": None, "database": DB,
                                     "table": "many"}
    assert plan.gtid is not None and plan.gtid.startswith("0-1-")
    # read again much later: the same rows, the same order, the same seq
    assert again[0].equals(tables[0]) and again[1].equals(tables[5])


def _simple_table(snap_server: Any, ddl: str, rows: list[tuple[Any, ...]]) -> None:
    snap_server.execute(f"DROP TABLE IF EXISTS {ddl.split()[2]}")
    snap_server.execute(ddl)
    with snap_server._conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {ddl.split()[2]} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows)


def test_table_without_primary_key_is_one_chunk(snap_server: Any, settings: ConnectionSettings,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    _simple_table(snap_server, f"CREATE TABLE {DB}.nokey (a INT, b VARCHAR(10))",
                  [(i % 7, f"v{i % 5}") for i in range(200)])
    held = HeldSnapshot(snap_server)
    plan = plan_snapshot(settings, f"{DB}.nokey", chunks=8)
    assert (plan.file, plan.pos) == held.position
    assert len(plan.chunks) == 1 and plan.key == ()
    assert any("has no primary key: its snapshot is one chunk" in rec.getMessage() for rec in caplog.records)
    snap_server.execute(f"DELETE FROM {DB}.nokey WHERE a = 3 LIMIT 5")
    snap_server.execute(f"UPDATE {DB}.nokey SET b = 'changed' WHERE a = 4")
    snap_server.execute(f"INSERT INTO {DB}.nokey VALUES (1, 'v1'), (9, 'new')")
    rows = pa.Table.from_batches(list(read_chunk(settings, plan, plan.chunks[0]))).to_pylist()
    expected = Counter(held.query(f"SELECT a, b FROM {DB}.nokey"))
    held.close()
    assert Counter((row["after"]["a"], row["after"]["b"]) for row in rows) == expected
    now = Counter(tuple(r) for r in snap_server.query(f"SELECT a, b FROM {DB}.nokey"))
    assert now != expected  # the chunk was read after the changes: they were rolled back


def test_enum_primary_key_is_one_chunk(snap_server: Any, settings: ConnectionSettings,
                                       caplog: pytest.LogCaptureFixture) -> None:
    """ORDER BY sorts an ENUM by its number, a chunk's bounds would compare it as text: chunks cut in one order and
    filtered in the other would overlap, so such a key is read as one chunk, every row once."""
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    _simple_table(snap_server, f"CREATE TABLE {DB}.ekey (k ENUM('c', 'b', 'a') PRIMARY KEY, v INT)",
                  [("c", 1), ("b", 2), ("a", 3)])
    plan = plan_snapshot(settings, f"{DB}.ekey", chunks=3)
    assert len(plan.chunks) == 1
    assert any("ENUM or SET" in rec.getMessage() for rec in caplog.records)
    rows = pa.Table.from_batches(list(read_chunk(settings, plan, plan.chunks[0]))).to_pylist()
    assert sorted(row["after"]["k"] for row in rows) == ["a", "b", "c"]


def test_composite_text_key(snap_server: Any, settings: ConnectionSettings) -> None:
    words = ["apple", "Banana", "cherry", "date", "Elder", "fig", "grape", "ÉCLAIR", "éclair2", "zeta"]
    _simple_table(snap_server, f"CREATE TABLE {DB}.pair (k VARCHAR(20), n INT, v INT, PRIMARY KEY (k, n))",
                  [(w, n, n * 10) for w in words for n in range(30)])
    held = HeldSnapshot(snap_server)
    plan = plan_snapshot(settings, f"{DB}.pair", chunks=4)
    assert plan.key == (0, 1) and len(plan.chunks) == 4
    # changes across the chunk boundaries, keys changed from one chunk to another, case variants of a key
    for lo in plan.chunks[1:]:
        assert lo.lo is not None
        snap_server.execute(f"DELETE FROM {DB}.pair WHERE (k, n) = (%s, %s)", lo.lo[0], int(lo.lo[1]))
        snap_server.execute(f"UPDATE {DB}.pair SET k = 'APPLE', n = n + %s WHERE (k, n) = (%s, %s)",
                            100 * lo.index, lo.lo[0], int(lo.lo[1]) + 1)
    snap_server.execute(f"INSERT INTO {DB}.pair VALUES ('BANANA', 999, 1), ('Cherry', 999, 2), ('aaa', 0, 3)")
    snap_server.execute(f"UPDATE {DB}.pair SET v = -v WHERE n < 3")
    # the chunks read at once, as tasks would: each its own snapshot and its own replica id for the binlog
    with ThreadPoolExecutor(len(plan.chunks)) as pool:
        tables = list(pool.map(lambda c: pa.Table.from_batches(list(read_chunk(settings, plan, c))), plan.chunks))
    rows = [row for table in tables for row in table.to_pylist()]
    expected = sorted(held.query(f"SELECT k, n, v FROM {DB}.pair"))
    held.close()
    assert sorted((row["after"]["k"], row["after"]["n"], row["after"]["v"]) for row in rows) == expected


def test_minimal_row_image_is_refused(snap_server: Any, settings: ConnectionSettings) -> None:
    snap_server.set_global("binlog_row_image", "MINIMAL")
    try:
        with pytest.raises(SourceError, match="binlog_row_image is MINIMAL.*binlog_row_image=FULL"):
            plan_snapshot(settings, f"{DB}.pair")
    finally:
        snap_server.set_global("binlog_row_image", "FULL")


def test_user_without_select(snap_server: Any) -> None:
    settings = parse_uri(f"mysql://nosel@127.0.0.1:{snap_server.port}", f"{PASSWORD}-no")
    with pytest.raises(AuthenticationError) as caught:
        plan_snapshot(settings, f"{DB}.pair")
    message = str(caught.value)
    assert f"{DB}.pair" in message and "GRANT SELECT" in message and "'nosel'" in message
    assert PASSWORD not in message


def test_missing_table(snap_server: Any, settings: ConnectionSettings) -> None:
    with pytest.raises(SourceError, match=f"the table {DB}.absent does not exist"):
        plan_snapshot(settings, f"{DB}.absent")


def test_ddl_in_the_window_stops_the_chunk(snap_server: Any, settings: ConnectionSettings) -> None:
    _simple_table(snap_server, f"CREATE TABLE {DB}.altered (id INT PRIMARY KEY, v INT)", [(i, i) for i in range(50)])
    plan = plan_snapshot(settings, f"{DB}.altered", chunks=2)
    snap_server.execute(f"INSERT INTO {DB}.altered VALUES (100, 1)")
    snap_server.execute(f"TRUNCATE TABLE {DB}.altered")
    with pytest.raises(SourceError, match="truncated in between.*must start again"):
        list(read_chunk(settings, plan, plan.chunks[0]))
    snap_server.execute(f"INSERT INTO {DB}.altered VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
    plan = plan_snapshot(settings, f"{DB}.altered", chunks=2)
    assert len(plan.chunks) == 2
    snap_server.execute(f"INSERT INTO {DB}.altered VALUES (100, 1)")
    snap_server.execute(f"ALTER TABLE {DB}.altered ADD COLUMN w INT")
    with pytest.raises(SourceError, match="a DDL statement changed the table.*ADD COLUMN w INT"):
        list(read_chunk(settings, plan, plan.chunks[1]))
