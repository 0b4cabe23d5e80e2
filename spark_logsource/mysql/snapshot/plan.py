"""The snapshot's plan (driver): the binlog position T, the table's layout and its primary-key chunks.

One consistent-snapshot transaction tells T (``binlog_snapshot_file`` / ``_position`` and ``BINLOG_GTID_POS``)
with no lock, and the chunk boundaries are read in it. The plan is small and picklable: tasks read the chunks
(:mod:`.chunk`). ``docs/formats/mysql-snapshot.md`` describes the method.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import AuthenticationError, OptionError, SourceError
from spark_logsource.mysql.position import binlog_number
from spark_logsource.mysql.snapshot.session import Session, open_session, quote
from spark_logsource.mysql.snapshot.values import Column
from spark_logsource.mysql.stream.client import ConnectionSettings
from spark_logsource.mysql.table.ddl import DdlError, parse_ddl_file
from spark_logsource.mysql.table.layout import Layout

__all__ = ["DEFAULT_CHUNKS", "DEFAULT_SERVER_ID_BASE", "Chunk", "SnapshotPlan", "plan_snapshot"]

log = logging.getLogger(__name__)

DEFAULT_CHUNKS = 8
#: A chunk's rows are numbered in 24 bits of ``seq`` below its index (so at most 256 chunks).
MAX_CHUNKS = 256
#: The replica ids the chunks' binlog reads register as (``base + chunk index``), apart from the stream's.
DEFAULT_SERVER_ID_BASE = 4_100_000_000
_INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})


@dataclass(frozen=True, slots=True)
class Chunk:
    """Primary keys ``lo <= key < hi`` (None: unbounded), as the server's text of each key column."""

    index: int
    lo: tuple[Any, ...] | None
    hi: tuple[Any, ...] | None


@dataclass(frozen=True, slots=True)
class SnapshotPlan:
    """The table as of binlog position ``file:pos`` (GTID state ``gtid``), cut into ``chunks``."""

    source: str  # mysql://host:port, no credentials
    server_id: int
    database: str
    table: str
    file: str
    pos: int
    gtid: str | None
    layout: Layout
    columns: tuple[Column, ...]
    key: tuple[int, ...]  # indexes of the primary key's columns in ``columns``; empty: no primary key
    chunks: tuple[Chunk, ...]
    server_id_base: int = DEFAULT_SERVER_ID_BASE

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def position(self) -> str:
        return f"{self.file}:{self.pos}"

    @property
    def file_number(self) -> int:
        return binlog_number(self.file)[1]


def _check_server(session: Session) -> None:
    """MariaDB, ROW format with FULL images, and the replication privileges: each missing thing said plainly."""
    source = session.settings.source
    version, row_format, row_image = session.query(
        "SELECT VERSION(), @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")[0]
    if "mariadb" not in str(version).lower():
        raise SourceError(source, None, f"the snapshot needs MariaDB (its consistent snapshot tells the binlog "
                                        f"position); the server is {version}")
    if str(row_format).upper() != "ROW":
        raise SourceError(source, None, f"binlog_format is {row_format}: the snapshot rolls chunks back with the "
                                        "binlog's row images, which only binlog_format=ROW writes")
    if str(row_image).upper() != "FULL":
        raise SourceError(source, None, f"binlog_row_image is {row_image}: the snapshot rolls chunks back with "
                                        "whole before-images, which only binlog_row_image=FULL writes")
    granted = {str(p).upper() for (p,) in session.query(
        "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES", doing="reading the user's privileges")}
    missing = [p for p in ("REPLICATION SLAVE",) if p not in granted]
    if not granted & {"BINLOG MONITOR", "REPLICATION CLIENT"}:
        missing.append("BINLOG MONITOR (or REPLICATION CLIENT)")
    if missing:
        raise AuthenticationError(source, None, f"the user {session.settings.user!r} needs {' and '.join(missing)} "
                                                f"to snapshot {session.table}")


def _columns(session: Session, database: str, table: str) -> tuple[Layout, tuple[Column, ...], tuple[int, ...]]:
    rows = session.query("SHOW CREATE TABLE " + quote(database) + "." + quote(table), doing="SHOW CREATE TABLE")
    try:
        history = parse_ddl_file(f"{rows[0][1]};", database).resolve(database, table)
    except (DdlError, IndexError) as exc:
        raise SourceError(session.settings.source, None, f"cannot read SHOW CREATE TABLE {session.table}: {exc}"
                          ) from None
    layout = history.versions[-1].layout if history is not None else None
    if layout is None:
        reason = history.versions[-1].reason if history is not None else "no CREATE TABLE in its answer"
        raise SourceError(session.settings.source, None, f"SHOW CREATE TABLE {session.table} not understood: "
                                                         f"{reason}")
    info = session.query("SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_KEY "
                         "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                         "ORDER BY ORDINAL_POSITION", database, table, doing="reading the columns")
    names = [str(r[0]).lower() for r in info]
    if names != [c.key for c in layout.columns]:
        raise SourceError(session.settings.source, None, f"{session.table}: SHOW CREATE TABLE and "
                                                         "information_schema.COLUMNS disagree (a DDL statement "
                                                         "in between?): plan the snapshot again")
    columns = tuple(Column(spec, str(r[1]).lower(), r[2] and str(r[2]), r[3] and str(r[3]))
                    for spec, r in zip(layout.columns, info, strict=True))
    key_rows = session.query("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
                             "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
                             database, table, doing="reading the primary key")
    key = tuple(names.index(str(r[0]).lower()) for r in key_rows)
    return layout, columns, key


def _boundaries(session: Session, database: str, table: str, columns: tuple[Column, ...], key: tuple[int, ...],
                chunks: int) -> list[tuple[Any, ...]]:
    """``chunks - 1`` increasing keys that cut the table into about equal parts (fewer on a small table).

    A single integer key: its MIN and MAX (two index look-ups) cut into equal ranges. Other keys: the key at
    every ``rows / chunks``-th place in key order, from the table's row estimate (``information_schema.TABLES``,
    no count); each look-up walks the primary key index up to its place.
    """
    names = ", ".join(quote(columns[i].spec.name) for i in key)
    target = quote(database) + "." + quote(table)
    if any(columns[i].data_type in ("enum", "set") for i in key):
        # ORDER BY sorts an ENUM / SET by its number, a chunk's bounds compare it as text: the two orders differ
        log.info("%s.%s: its primary key has an ENUM or SET column: its snapshot is one chunk", database, table)
        return []
    if len(key) == 1 and columns[key[0]].data_type in _INTEGER_TYPES:
        low, high = session.query(f"SELECT MIN({names}), MAX({names}) FROM {target}", doing="reading the key range")[0]
        if low is None:
            return []
        lo, hi = int(low), int(high)
        # integer arithmetic: a BIGINT range is wider than a float's 53 bits
        cuts = sorted({lo + (hi - lo + 1) * k // chunks for k in range(1, chunks)} - {lo})
        return [(str(c),) for c in cuts if lo < c <= hi]
    (estimate,) = session.query("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                                "TABLE_NAME = %s", database, table, doing="reading the row estimate")[0]
    rows = int(estimate or 0)
    out: list[tuple[Any, ...]] = []
    for k in range(1, chunks):
        offset = rows * k // chunks
        if offset == 0:
            continue
        found = session.query(f"SELECT {names} FROM {target} ORDER BY {names} LIMIT 1 OFFSET {offset}",
                              doing="reading a chunk boundary")
        if not found:
            break
        if not out or found[0] != out[-1]:
            out.append(tuple(found[0]))
    return out


def plan_snapshot(settings: ConnectionSettings, table: str, chunks: int = DEFAULT_CHUNKS, *,
                  server_id_base: int = DEFAULT_SERVER_ID_BASE) -> SnapshotPlan:
    """The binlog position T of a consistent snapshot of ``table`` (``db.table``) and its chunks (driver).

    Checks the server (MariaDB, ``binlog_format=ROW``, ``binlog_row_image=FULL``), the user's privileges
    (SELECT on the table, REPLICATION SLAVE, BINLOG MONITOR or REPLICATION CLIENT) and that the table exists."""
    database, dot, name = table.replace("`", "").partition(".")
    if not dot or not database or not name:
        raise OptionError("table", f"expected db.table, got {table!r}")
    if not 1 <= chunks <= MAX_CHUNKS:
        raise OptionError("chunks", f"expected 1 to {MAX_CHUNKS}, got {chunks}")
    with open_session(settings, f"{database}.{name}") as session:
        (fold,) = session.query("SELECT @@GLOBAL.lower_case_table_names")[0]
        if int(fold or 0) == 1:
            # the server stores and logs such names in lower case: the binlog window's TABLE_MAPs name the table so
            database, name = database.lower(), name.lower()
        session.query(f"SELECT 1 FROM {quote(database)}.{quote(name)} LIMIT 0", doing="checking the table")
        _check_server(session)
        (server_id,) = session.query("SELECT @@GLOBAL.server_id")[0]
        file, pos = session.snapshot_position()
        (gtid,) = session.query("SELECT BINLOG_GTID_POS(%s, %s)", file, pos)[0]
        layout, columns, key = _columns(session, database, name)
        if not key:
            log.info("%s: %s.%s has no primary key: its snapshot is one chunk", settings.source, database, name)
            cuts: list[tuple[Any, ...]] = []
        else:
            cuts = _boundaries(session, database, name, columns, key, chunks)
        session.query("COMMIT")
    bounds: list[tuple[Any, ...] | None] = [None, *cuts, None]
    parts = tuple(Chunk(i, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1))
    plan = SnapshotPlan(settings.source, int(server_id), database, name, file, pos, str(gtid) if gtid else None,
                        layout, columns, key, parts, server_id_base)
    log.info("%s: snapshot of %s at %s (GTID %s): %d chunk(s)", settings.source, plan.name, plan.position,
             plan.gtid, len(parts))
    return plan
