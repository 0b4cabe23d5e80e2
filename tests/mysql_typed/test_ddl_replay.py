"""DDL replay (``spark_logsource.mysql.table.ddl``) against MariaDB's own ``information_schema`` after each statement.

The statements are the ones the server logged (QUERY events read back from its binlog), replayed one by one;
after each, every table of the database must have the columns, in order, with the types the server reports.
"""

from __future__ import annotations

from typing import Any

import pytest

import spark_logsource
from spark_logsource.mysql.table.ddl import Catalog
from spark_logsource.mysql.table.layout import ColumnSpec

DB = "ddlrep"
STATEMENTS = [
    f"CREATE TABLE {DB}.t (a INT, b VARCHAR(10), PRIMARY KEY (a)) DEFAULT CHARSET=utf8mb4",
    f"ALTER TABLE {DB}.t ADD COLUMN c BIGINT UNSIGNED FIRST, ADD d DECIMAL(12,4) AFTER a",
    f"ALTER ONLINE TABLE {DB}.t DROP COLUMN b, ADD COLUMN e ENUM('x','y') NOT NULL",
    f"ALTER TABLE {DB}.t CHANGE COLUMN a a2 SMALLINT UNSIGNED NOT NULL AFTER d",
    f"ALTER TABLE {DB}.t MODIFY d DECIMAL(14,2) FIRST",
    f"ALTER TABLE {DB}.t RENAME COLUMN e TO e2, ADD INDEX ic (c)",
    f"ALTER TABLE {DB}.t ADD COLUMN IF NOT EXISTS c INT, ADD COLUMN IF NOT EXISTS g JSON",
    f"ALTER TABLE {DB}.t DROP COLUMN IF EXISTS zz, ADD h POINT, ADD i6 INET6, ADD u UUID, ADD bt BIT(3)",
    f"RENAME TABLE {DB}.t TO {DB}.t_tmp, {DB}.t_tmp TO {DB}.t2",
    f"CREATE TABLE {DB}.t3 LIKE {DB}.t2",
    f"ALTER TABLE {DB}.t2 RENAME TO {DB}.t4, ADD COLUMN k TIME(3), ADD y YEAR, ADD vb VARBINARY(4)",
    f"CREATE OR REPLACE TABLE {DB}.t4 (z TINYINT, w MEDIUMINT UNSIGNED, fl FLOAT, db DOUBLE)",
    f"ALTER TABLE {DB}.t3 DEFAULT CHARSET=latin1, ADD COLUMN l TEXT, ADD m CHAR(3) CHARACTER SET ascii",
    f"CREATE TABLE IF NOT EXISTS {DB}.t3 (nope INT)",
    f"DROP TABLE {DB}.t4",
]
#: A CREATE TABLE IF NOT EXISTS of a table that exists is not logged by MariaDB.
UNLOGGED = {f"CREATE TABLE IF NOT EXISTS {DB}.t3 (nope INT)"}

_INT_SIZES = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 8}
_KINDS = {"float": "float", "double": "double", "decimal": "decimal", "date": "date", "datetime": "datetime",
          "timestamp": "timestamp", "time": "time", "year": "year", "char": "char", "varchar": "char",
          "binary": "char", "varbinary": "char", "text": "blob", "tinytext": "blob", "mediumtext": "blob",
          "longtext": "blob", "blob": "blob", "tinyblob": "blob", "mediumblob": "blob", "longblob": "blob",
          "enum": "enum", "set": "set", "bit": "bit", "point": "geometry", "geometry": "geometry",
          "inet6": "char", "uuid": "char"}


def _expected(row: tuple) -> dict[str, Any]:
    name, data_type, column_type, charset, check = row
    kind = "json" if data_type == "longtext" and check else "int" if data_type in _INT_SIZES else _KINDS[data_type]
    out: dict[str, Any] = {"name": name, "kind": kind, "unsigned": "unsigned" in column_type}
    if kind == "int":
        out["size"] = _INT_SIZES[data_type]
    if kind in ("char", "blob"):
        out["binary"] = charset is None
        if charset is not None:
            out["charset"] = charset
    return out


def _ours(spec: ColumnSpec, default_charset: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name, "kind": spec.kind, "unsigned": spec.unsigned}
    if spec.kind == "int":
        out["size"] = spec.size
    if spec.kind in ("char", "blob"):
        out["binary"] = spec.binary
        if not spec.binary:
            out["charset"] = spec.charset or default_charset
    return out


def _server_tables(server: Any) -> dict[str, list[dict[str, Any]]]:
    json_checks = {(t, c.lower()) for t, c in server.query(
        "SELECT table_name, check_clause FROM information_schema.check_constraints WHERE constraint_schema = %s",
        DB)}
    rows = server.query(
        "SELECT table_name, column_name, data_type, column_type, character_set_name "
        "FROM information_schema.columns WHERE table_schema = %s ORDER BY table_name, ordinal_position", DB)
    out: dict[str, list[dict[str, Any]]] = {}
    for table, name, *rest in rows:
        check = (table, f"json_valid(`{name.lower()}`)") in json_checks
        out.setdefault(table, []).append(_expected((name, *rest, check)))
    return out


@pytest.fixture(scope="module")
def replayed(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[str]]:
    """The server's tables after each statement, and the DDL statements as its binlog logged them."""
    snapshots: list[dict] = []

    def workload(server: Any) -> None:
        server.execute(f"DROP DATABASE IF EXISTS {DB}")
        server.execute(f"CREATE DATABASE {DB}")
        for sql in STATEMENTS:
            server.execute(sql)
            if sql not in UNLOGGED:
                snapshots.append(_server_tables(server))

    files = mariadb.run_workload(workload, dest=tmp_path_factory.mktemp("ddl_replay"))
    events = spark_logsource.read("mysql-binlog", [str(f) for f in files], view="events", eventTypes="QUERY")
    logged = [q for q in events.column("query").to_pylist()
              if q.split(None, 1)[0].upper() in ("CREATE", "ALTER", "RENAME", "DROP") and DB in q]
    assert len(logged) == len(STATEMENTS) - len(UNLOGGED) + 2, "\n".join(logged)  # + DROP / CREATE DATABASE
    return snapshots, logged[2:]


def test_replayed_layouts_equal_information_schema(replayed: tuple[list[dict], list[str]]) -> None:
    snapshots, logged = replayed
    catalog = Catalog()
    for k, (sql, server) in enumerate(zip(logged, snapshots, strict=True)):
        catalog.apply(sql, None, (0, k))
        ours = {}
        for (db, table), obj in catalog.by_name.items():
            if db != DB:
                continue
            layout = catalog.histories[obj].versions[-1].layout
            assert layout is not None, f"after {sql!r}: {table} unknown ({catalog.histories[obj].versions[-1]})"
            ours[table] = [_ours(c, layout.default_charset) for c in layout.columns]
        assert ours == server, f"after statement {k}: {sql}"
    # the table renamed twice is one table; the one created over its name later is another
    t = catalog.resolve(DB, "t")
    assert t is not None and [v.table for v in t.versions] == ["t"] * 8 + ["t_tmp", "t2", "t4", "t4"]
    assert t.versions[-1].reason == "replaced" and catalog.resolve(DB, "t4") is not t
