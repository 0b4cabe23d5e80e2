"""The CDC workload of ``tests/cdc``: inserts, updates and deletes of one typed table on the real MariaDB 10.11.

Several keys change more than once, transactions hold several statements, a key is deleted and inserted again, an
update moves a row to another primary key, and a TRUNCATE sits between two rotations of the binlog. The workload
records where the TRUNCATE and the rotations are, and the table's final ``SELECT *``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import spark_logsource
from spark_logsource.arrow.variant import decode_variant

DB = "cdc"
TABLE = f"{DB}.accounts"
KEYS = ["id"]

CREATE = f"""CREATE TABLE {TABLE} (
  id INT NOT NULL PRIMARY KEY, name VARCHAR(40), balance DECIMAL(12,2), big BIGINT UNSIGNED, small TINYINT,
  ratio DOUBLE, born DATE, seen DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), flags SET('a','b','c'),
  state ENUM('new','open','closed'), raw VARBINARY(16), doc JSON, note TEXT
)"""

_ROWS = [
    "(1, 'ann', 10.50, 18446744073709551615, -128, 1.25, '1990-01-02', '2024-02-29 23:59:59.123456', "
    "'2038-01-19 03:14:07.999', '-838:59:59.99', 'a,c', 'new', x'00ff', '{\"k\": [1, 2.5]}', 'first')",
    "(2, 'bob', -0.01, 0, 127, -2.5e300, '1000-01-01', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', "
    "'00:00:00', '', 'open', x'', '[]', '')",
    "(3, 'cé ✓', 99999.99, 1, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, 'dan', 4.00, 4, 4, 4.5, '2004-04-04', '2004-04-04 04:04:04', '2004-04-04 04:04:04', '04:04:04', 'b', "
    "'closed', x'04', '{\"n\": null}', 'four')",
    "(5, 'eve', 5.00, 5, 5, 5.5, '2005-05-05', NULL, NULL, '05:05:05.5', 'a', 'new', NULL, '5', 'five')",
    "(6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]

#: Transactions (each a list of statements, committed together); ``"FLUSH"`` rotates the binlog, ``"TRUNCATE"``
#: truncates the table.
SCRIPT: list[list[str] | str] = [
    [f"INSERT INTO {TABLE} VALUES {', '.join(_ROWS)}"],
    [f"UPDATE {TABLE} SET balance = balance + 1, state = 'open' WHERE id = 1",
     f"UPDATE {TABLE} SET name = 'bobby', flags = 'a,b,c', doc = '{{\"x\": {{\"y\": true}}}}' WHERE id = 2",
     f"DELETE FROM {TABLE} WHERE id = 3",
     f"INSERT INTO {TABLE} (id, name, balance) VALUES (7, 'gil', 7.77)"],
    [f"UPDATE {TABLE} SET balance = balance * 2, seen = '2001-01-01 00:00:00.5' WHERE id = 1"],
    [f"UPDATE {TABLE} SET id = 40, note = 'moved' WHERE id = 4"],
    "FLUSH",
    [f"DELETE FROM {TABLE} WHERE id = 2",
     f"INSERT INTO {TABLE} (id, name, note) VALUES (3, 'again', 're-inserted')",
     f"UPDATE {TABLE} SET small = -1 WHERE id = 5",
     f"UPDATE {TABLE} SET small = -2, raw = x'0505' WHERE id = 5"],
    [f"UPDATE {TABLE} SET ratio = -0.5 WHERE id IN (1, 6, 40)"],
    "TRUNCATE",
    [f"INSERT INTO {TABLE} (id, name, balance, doc) VALUES (1, 'ann2', 1.00, '{{\"after\": \"truncate\"}}'), "
     "(2, 'bob2', 2.00, NULL), (8, 'hal', 8.00, '[1, 2, 3]')",
     f"UPDATE {TABLE} SET name = 'hal2', ts = '2020-02-02 02:02:02.002' WHERE id = 8"],
    [f"DELETE FROM {TABLE} WHERE id = 1",
     f"UPDATE {TABLE} SET balance = balance + 0.01 WHERE id = 2",
     f"UPDATE {TABLE} SET balance = balance + 0.01 WHERE id = 2",
     f"INSERT INTO {TABLE} (id, name, tm, flags) VALUES (9, 'ida', '-00:00:01.5', 'c')"],
    "FLUSH",
    [f"INSERT INTO {TABLE} (id, name) VALUES (1, 'ann3')"],
    [f"UPDATE {TABLE} SET note = CONCAT(COALESCE(note, ''), '!')"],
    [f"DELETE FROM {TABLE} WHERE id = 9"],
]


@dataclass
class CdcWorkload:
    files: list[Path]
    truncate: tuple[str, int]  # the binlog file name and position of the TRUNCATE's QUERY event
    final: dict[int, dict[str, Any]]  # SELECT * at the end, by id
    columns: list[str]
    at_rotations: list[dict[int, dict[str, Any]]]  # SELECT * right before each FLUSH of the script


def run_cdc_workload(server: Any, dest: Path) -> CdcWorkload:
    state: dict[str, Any] = {}

    def workload(srv: Any) -> None:
        srv.execute("SET time_zone = '+00:00'")  # TIMESTAMP values come back in UTC, as the binlog holds them
        srv.execute(f"DROP DATABASE IF EXISTS {DB}")
        srv.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
        srv.execute(CREATE)
        for step in SCRIPT:
            if step == "FLUSH":
                state.setdefault("at_rotations", []).append(_select(srv)[1])
                srv.flush_logs()
            elif step == "TRUNCATE":
                srv.execute(f"TRUNCATE TABLE {TABLE}")
                state["truncate"] = _truncate_event(srv)
            else:
                srv.execute("BEGIN")
                for sql in step:
                    srv.execute(sql)
                srv.execute("COMMIT")
        state["columns"], state["final"] = _select(srv)

    files = server.run_workload(workload, {"binlog_row_image": "FULL"}, dest=dest)
    return CdcWorkload(files, state["truncate"], state["final"], state["columns"], state["at_rotations"])


def _select(srv: Any) -> tuple[list[str], dict[int, dict[str, Any]]]:
    with srv._conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {TABLE}")
        columns = [d[0] for d in cur.description]
        return columns, {r[0]: dict(zip(columns, r, strict=True)) for r in cur.fetchall()}


def _truncate_event(srv: Any) -> tuple[str, int]:
    """Where the server logged the TRUNCATE just run: its own SHOW BINLOG EVENTS of the current file."""
    current = srv.query("SHOW MASTER STATUS")[0][0]
    events = srv.query(f"SHOW BINLOG EVENTS IN '{current}'")
    hits = [(row[0], int(row[1])) for row in events if row[2] == "Query" and "TRUNCATE" in str(row[5]).upper()]
    assert len(hits) == 1, events
    return hits[0]


def file_number(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


def seq_of(file: str, pos: int, row_index: int) -> Decimal:
    """The order value the view's ``seq`` column is defined as: ``file_number * 2**64 + pos * 2**32 + row_index``."""
    return Decimal(file_number(file) * 2**64 + pos * 2**32 + row_index)


def read_changes(files: list[Path], truncate: tuple[str, int]) -> tuple[pa.Table, list[str]]:
    """view=table's rows of the workload's table, with ``seq`` and the truncate row; also what had to be added here
    because the view does not give it yet (named in the test's report)."""
    table = spark_logsource.read("mysql-binlog", [str(f) for f in files], view="table", table=TABLE,
                                 mode="FAILFAST")
    added = []
    source = table.column("source").to_pylist()
    seqs = [seq_of(s["file"], s["pos"], s["row_index"]) for s in source]
    if "seq" not in table.column_names:
        added.append("seq")
        table = table.append_column("seq", pa.array(seqs, pa.decimal128(38, 0)))
    else:  # the view's own seq must be the formula's
        assert table.column("seq").to_pylist() == seqs
    if not pc.any(pc.equal(table.column("op"), "t")).as_py():
        added.append("op='t'")
        row = {name: None for name in table.column_names}
        row.update(op="t", seq=seq_of(truncate[0], truncate[1], 0),
                   source={"file": truncate[0], "pos": truncate[1], "row_index": 0})
        table = pa.concat_tables([table, pa.Table.from_pylist([row], schema=table.schema)])
    table = table.take(pc.sort_indices(table, sort_keys=[("seq", "ascending")]))
    return table, added


def _time(text: str) -> dt.timedelta:
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    return sign * dt.timedelta(hours=int(h), minutes=int(m), seconds=float(Decimal(s)))


def same(ours: Any, server: Any) -> bool:
    """A merged cell against pymysql's value of the same column (the server's text protocol)."""
    if server is None or ours is None:
        return server is None and ours is None
    if isinstance(server, dt.timedelta):  # TIME: ours is the server's own text
        return isinstance(ours, str) and _time(ours) == server
    if isinstance(ours, dt.datetime) and ours.tzinfo is not None:  # TIMESTAMP: the session's time zone is UTC
        return ours.replace(tzinfo=None) == server
    if isinstance(ours, dict) and set(ours) == {"value", "metadata"}:  # JSON as variant
        return bool(decode_variant(ours["value"], ours["metadata"]) == json.loads(server, parse_float=Decimal))
    return (type(ours) is type(server) and bool(ours == server)) or (
        isinstance(ours, Decimal) and isinstance(server, int) and ours == server)


def assert_matches_server(rows: list[dict[str, Any]], workload: CdcWorkload,
                          server: dict[int, dict[str, Any]] | None = None) -> None:
    """Merged rows (``seq`` and the table's columns) equal the server's ``SELECT *`` (by default the final one),
    cell by cell."""
    server = workload.final if server is None else server
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows), "a key is stored twice"
    assert sorted(by_id) == sorted(server)
    for key, server_row in server.items():
        ours = by_id[key]
        assert set(ours) == set(workload.columns) | {"seq"}, sorted(ours)
        for column in workload.columns:
            assert same(ours[column], server_row[column]), \
                f"id {key} {column}: merged {ours[column]!r} != server {server_row[column]!r}"
