"""The typed-table workload of ``tests/mysql_typed``, run on the session's real MariaDB 10.11, with the server's
own SELECTs.

One table goes through a DDL history (add / drop / rename / modify column, rename table) mixed with DML. After
every statement the workload takes ``SELECT * FROM`` the table (and, after a DML statement, ``@@last_gtid``),
so each row of ``view=table`` can be compared with what the server said at that moment. The binlog is rotated
in the middle; ``SHOW CREATE TABLE`` at that point is kept as the DDL file of ``schemaFrom=ddl:<path>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DB = "typed"

CREATE = f"""CREATE TABLE {DB}.orders (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  ti TINYINT, uti TINYINT UNSIGNED, si SMALLINT, usi SMALLINT UNSIGNED, mi MEDIUMINT, umi MEDIUMINT UNSIGNED,
  ui INT UNSIGNED, bi BIGINT, ubi BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, amount DECIMAL(10,2), big DECIMAL(30,10),
  dt DATETIME(6), ts TIMESTAMP(3) NULL, dd DATE, tm TIME(2), yr YEAR,
  vc VARCHAR(20), ch CHAR(5) CHARACTER SET latin1, tx TEXT, vb VARBINARY(8), bl BLOB,
  e ENUM('new','paid','sent'), st SET('a','b','c'), b BIT(10), j JSON, g POINT
)"""

_ROW1 = ("(1, -128, 255, -32768, 65535, -8388608, 16777215, 4294967295, -9223372036854775808, "
         "18446744073709551615, 1.5, -2.25e300, -12345678.90, 12345678901234567890.0123456789, "
         "'2024-02-29 23:59:59.123456', '2038-01-19 03:14:07.999', '1000-01-01', '-838:59:59.99', 1901, "
         "'héllo wörld ✓', 'é', REPEAT('t', 300), x'00ff10', x'deadbeef', 'paid', 'a,c', b'1010101010', "
         "'{\"k\": [1, 2.5, \"x\"], \"n\": null}', ST_GeomFromText('POINT(1 2)'))")
_ROW2 = ("(2, 127, 0, 32767, 0, 8388607, 0, 0, 9223372036854775807, 0, -0.1, 0, 0.01, -0.0000000001, "
         "'9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '9999-12-31', '00:00:00', 2155, '', '', '', "
         "'', '', 'new', '', b'0', '[]', ST_GeomFromText('POINT(-1.5 0)'))")
_ROW3 = "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, " \
        "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"

#: (statement, rotate the binlog after it); ``{t}`` is the table's name at that point.
STEPS: list[tuple[str, bool]] = [
    (f"INSERT INTO {DB}.orders VALUES {_ROW1}, {_ROW2}, {_ROW3}", False),
    (f"UPDATE {DB}.orders SET vc = 'changed', amount = amount + 1, e = 'sent', st = 'b', yr = 2000 "
     "WHERE id IN (2, 3)", False),
    (f"ALTER TABLE {DB}.orders ADD COLUMN note VARCHAR(30) AFTER id", False),
    (f"INSERT INTO {DB}.orders (id, note, si, dt, j) VALUES (4, 'fourth', 7, '2020-01-01 00:00:00', "
     "'{\"a\": {\"b\": true}}')", False),
    (f"UPDATE {DB}.orders SET note = CONCAT('n', id)", False),
    (f"ALTER TABLE {DB}.orders DROP COLUMN tx", False),
    (f"DELETE FROM {DB}.orders WHERE id = 1", True),
    (f"ALTER TABLE {DB}.orders CHANGE vc label VARCHAR(40) CHARACTER SET utf8mb4", False),
    (f"ALTER TABLE {DB}.orders RENAME COLUMN note TO memo", False),
    (f"ALTER TABLE {DB}.orders MODIFY si INT", False),
    (f"UPDATE {DB}.orders SET si = 100000, label = 'x' WHERE id = 3", False),
    (f"RENAME TABLE {DB}.orders TO {DB}.orders2", False),
    (f"INSERT INTO {DB}.orders2 (id, memo, label, ubi, big) VALUES (5, 'five', 'fünf', 1, -1.5)", False),
    (f"ALTER TABLE {DB}.orders2 MODIFY e ENUM('new','paid','sent','void')", False),
    (f"UPDATE {DB}.orders2 SET e = 'void', ubi = ubi + 9223372036854775807 WHERE id = 5", False),
    (f"UPDATE {DB}.orders2 SET id = 6 WHERE id = 3", False),
    (f"DELETE FROM {DB}.orders2 WHERE id = 2", False),
    # every row changed after the last DDL, so that each row's last image has the table's final layout
    (f"UPDATE {DB}.orders2 SET memo = CONCAT('m', id)", False),
]
FINAL_TABLE = "orders2"


@dataclass
class Snapshot:
    """``SELECT *`` of the table right after a statement (``gtid``: the statement's, for a DML statement)."""

    step: int
    gtid: str | None
    columns: list[str]
    rows: dict[int, dict[str, Any]]


@dataclass
class TypedWorkload:
    metadata: str
    files: list[Path]
    snapshots: list[Snapshot]
    ddl_file: Path  # SHOW CREATE TABLE at the rotation
    later_files: list[Path]  # the binlogs written after the rotation
    final: Snapshot = field(init=False)

    def __post_init__(self) -> None:
        self.final = self.snapshots[-1]


def _select(server: Any, table: str) -> tuple[list[str], dict[int, dict[str, Any]]]:
    with server._conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {DB}.{table}")
        columns = [d[0] for d in cur.description]
        rows = {r[0]: dict(zip(columns, r, strict=True)) for r in cur.fetchall()}
    return columns, rows


def run_typed_workload(server: Any, metadata: str, dest: Path) -> TypedWorkload:
    snapshots: list[Snapshot] = []
    state: dict[str, Any] = {}

    def workload(srv: Any) -> None:
        srv.execute("SET time_zone = '+00:00'")  # TIMESTAMP values come back in UTC, as the binlog holds them
        srv.execute(f"DROP DATABASE IF EXISTS {DB}")
        srv.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
        srv.execute(CREATE)
        table = "orders"
        for k, (sql, rotate) in enumerate(STEPS):
            srv.execute(sql)
            if sql.startswith("RENAME TABLE"):
                table = FINAL_TABLE
            dml = sql.split(None, 1)[0] in ("INSERT", "UPDATE", "DELETE")
            gtid = srv.query("SELECT @@last_gtid")[0][0] if dml else None
            columns, rows = _select(srv, table)
            snapshots.append(Snapshot(k, gtid, columns, rows))
            if rotate:
                state["ddl"] = srv.query(f"SHOW CREATE TABLE {DB}.{table}")[0][1]
                state["rotated_at"] = {p.name for p in srv.binlog_files()}
                srv.flush_logs()

    files = server.run_workload(workload, {"binlog_row_metadata": metadata, "binlog_row_image": "FULL"}, dest=dest)
    ddl_file = dest / "orders.sql"
    ddl_file.write_text(f"USE `{DB}`;\n{state['ddl']};\n")
    later = [f for f in files if f.name not in state["rotated_at"]]
    assert 1 <= len(later) < len(files)
    return TypedWorkload(metadata, files, snapshots, ddl_file, later)


def count_kernel_events(patch: Any, counts: list[tuple[str, bool]]) -> None:
    """Record in ``counts`` what view=table's kernel makes of each rows event offered to it: ``("run", True)`` per
    event of a run it read, ``("one", converted)`` for an event offered alone (not converted: declined, the Python
    path read it). A run the kernel does not take is offered again event by event. ``patch``: a
    ``pytest.MonkeyPatch`` context, which undoes this."""
    from spark_logsource.mysql.table import rows as typed_rows

    one, run = typed_rows.typed_rows_event, typed_rows.typed_run

    def counted_one(*args: Any, **kwargs: Any) -> Any:
        rows = one(*args, **kwargs)
        counts.append(("one", rows is not None))
        return rows

    def counted_run(*args: Any, **kwargs: Any) -> Any:
        rows = run(*args, **kwargs)
        counts.extend([("run", True)] * (0 if rows is None else len(rows.events)))
        return rows

    patch.setattr(typed_rows, "typed_rows_event", counted_one)
    patch.setattr(typed_rows, "typed_run", counted_run)
