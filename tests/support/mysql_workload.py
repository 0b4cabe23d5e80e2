"""The MariaDB workload that the binlog Spark and CLI tests share, and its oracle: ``mariadb-binlog -vv``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.oracle.mariadb_binlog import OracleRow, run_oracle

# Phase k of the workload is logged at T0 + k hours. T0 is in the future (two days ahead, on the hour) so the
# file's event times never go back (its first events carry the real time): mariadb-binlog's date-time options
# stop/start at the first event past the limit, which selects the same events as a filter only then.
T0 = (int(time.time()) // 3600 + 48) * 3600
DATABASES = ("g_shop", "g_crm")

_AT = re.compile(rb"^# at (\d+)$")
_HEADER = re.compile(rb"^#(\d{6}) ?([ \d]\d:\d\d:\d\d) server id (\d+)\s+end_log_pos (\d+)(.*)$")
_ROWS_EVENT = re.compile(rb"\b(Write|Update|Delete)_rows\w*: table id \d+")
_GTID_EVENT = re.compile(rb"\sGTID \d+-\d+-\d+")
_ROW_OP = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `(.*)`\.`(.*)`$")
_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


# -- the oracle: mariadb-binlog -vv ------------------------------------------------------------------------------
@dataclass(frozen=True)
class OracleEvent:
    """One event as mariadb-binlog prints its header: ``# at POS`` then ``#YYMMDD hh:mm:ss server id N ...``."""

    pos: int | None  # None when mariadb-binlog printed '# at' lines without a header (filtered-out events)
    end_pos: int
    timestamp: dt.datetime
    server_id: int
    is_rows: bool
    is_transaction_start: bool  # a MariaDB GTID event (it replaces BEGIN)


@dataclass
class OracleListing:
    """What one mariadb-binlog run printed: event headers and, per (database, table, op), the rows."""

    events: list[OracleEvent]
    row_counts: Counter[tuple[str, str, str]]

    @property
    def rows_event_positions(self) -> set[int]:
        positions = {e.pos for e in self.events if e.is_rows}
        assert None not in positions, "positions are known in an unfiltered listing only"
        return positions  # type: ignore[return-value]

    @property
    def rows_event_ends(self) -> set[int]:
        return {e.end_pos for e in self.events if e.is_rows}


def mariadb_binlog(path: Path, *args: str) -> bytes:
    """The output of ``mariadb-binlog -vv --base64-output=decode-rows ARGS PATH`` (times in UTC)."""
    return subprocess.run(["mariadb-binlog", "-vv", "--base64-output=decode-rows", *args, str(path)],
                          capture_output=True, check=True, timeout=120, env={**os.environ, "TZ": "UTC"}).stdout


def oracle_listing(path: Path, *args: str) -> OracleListing:
    """Parse a mariadb-binlog listing. Without filters it prints one ``# at`` line per event header (an
    ANNOTATE_ROWS header comes after its TABLE_MAP's ``# at``, in the same order), so the n-th header is the event
    at the n-th position; with filters some ``# at`` lines have no header and only ``end_log_pos`` is known."""
    positions: list[int] = []
    events: list[OracleEvent] = []
    counts: Counter[tuple[str, str, str]] = Counter()
    for line in mariadb_binlog(path, *args).split(b"\n"):
        if (m := _AT.match(line)) is not None:
            positions.append(int(m.group(1)))
        elif (m := _HEADER.match(line)) is not None:
            when = dt.datetime.strptime((m.group(1) + b" " + m.group(2).strip()).decode(), "%y%m%d %H:%M:%S")
            events.append(OracleEvent(None, int(m.group(4)), when.replace(tzinfo=dt.UTC), int(m.group(3)),
                                      _ROWS_EVENT.search(m.group(5)) is not None,
                                      _GTID_EVENT.search(m.group(5)) is not None))
        elif (m := _ROW_OP.match(line)) is not None:
            counts[(m.group(2).decode(), m.group(3).decode(), _OPS[m.group(1)])] += 1
    if len(events) == len(positions):
        events = [dataclasses.replace(e, pos=p) for e, p in zip(events, positions, strict=True)]
    return OracleListing(events, counts)


@dataclass(frozen=True)
class ExpectedRow:
    """One row change as the oracle printed it, with its event's header fields."""

    pos: int
    row_index: int
    timestamp: dt.datetime
    server_id: int
    database: str
    table: str
    op: str
    row: OracleRow


@dataclass
class Workload:
    path: Path
    rows: list[ExpectedRow]
    columns: dict[tuple[str, str], list[tuple[str, str]]]  # (db, table) -> [(column, data type)] by ordinal
    listing: OracleListing  # the unfiltered listing


def _at(k: int) -> str:
    """The UTC time of phase ``k`` as ``YYYY-MM-DD hh:mm:ss``."""
    return dt.datetime.fromtimestamp(T0 + 3600 * k, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _phase(k: int) -> str:
    return f"SET timestamp = {T0 + 3600 * k}"


def _orders_values(first: int, count: int) -> str:
    return ", ".join(f"({n % 13}, {n % 9 - 3}, {n * 1000 - 25000}, 'SKU-{n:04d}', {n * 1.25:.2f}, "
                     f"'2023-11-{1 + n % 28:02d} 10:00:00', {'NULL' if n % 4 == 0 else repr(f'note {n}')})"
                     for n in range(first, first + count))


def _workload(server: Any) -> None:
    ex = server.execute
    ex(_phase(0))
    for db in DATABASES:
        ex(f"DROP DATABASE IF EXISTS {db}")
        ex(f"CREATE DATABASE {db}")
    ex("CREATE TABLE g_shop.orders (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL,"
       " qty SMALLINT, amount BIGINT, sku VARCHAR(32), price DECIMAL(10,2), created DATETIME, note TEXT)")
    ex("CREATE TABLE g_shop.items (id INT NOT NULL PRIMARY KEY, name VARCHAR(40), stock INT UNSIGNED)")
    ex("CREATE TABLE g_crm.customers (id INT NOT NULL PRIMARY KEY, name VARCHAR(60), score INT)")
    ex(_phase(1))
    ex("BEGIN")
    for k in range(3):  # each statement stays under binlog_row_event_max_size: one rows event per statement
        ex("INSERT INTO g_shop.orders (customer_id, qty, amount, sku, price, created, note) VALUES "
           + _orders_values(30 * k, 30))
    ex("INSERT INTO g_shop.items VALUES " + ", ".join(f"({i}, 'item {i}', {i * 7})" for i in range(1, 11)))
    ex("COMMIT")
    ex(_phase(2))
    ex("SET SESSION server_id = 2")
    ex("INSERT INTO g_crm.customers VALUES (1, 'Ann', 10), (2, 'Bob', -5), (3, 'Cy', NULL), (4, 'Di', 0), "
       "(5, 'Ed', 2147483647)")
    ex("UPDATE g_crm.customers SET score = score + 1 WHERE id <= 2")
    ex("SET SESSION server_id = 1")
    ex(_phase(3))
    ex("UPDATE g_shop.orders SET qty = qty + 1, note = CONCAT(IFNULL(note, ''), '!') WHERE id % 3 = 0")
    ex("DELETE FROM g_shop.items WHERE id > 7")
    ex(_phase(4))
    ex("BEGIN")
    ex("DELETE FROM g_shop.orders WHERE id > 80")
    ex("UPDATE g_shop.items SET stock = 4000000000 WHERE id = 1")
    ex("DELETE FROM g_crm.customers WHERE id = 4")
    ex("COMMIT")
    ex(_phase(5))
    ex("INSERT INTO g_shop.orders (customer_id, qty, amount) VALUES (99, NULL, NULL)")


def build_workload(mariadb: Any, tmp_path_factory: Any) -> Workload:
    settings = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "binlog_checksum": "CRC32",
                "log_bin_compress": "OFF"}
    files = mariadb.run_workload(_workload, settings, dest=tmp_path_factory.mktemp("spark-binlog"))
    assert len(files) == 1, files
    path = files[0]
    columns: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for db, table, column, data_type in mariadb.query(
            "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema IN ('g_shop', 'g_crm') ORDER BY table_schema, table_name, ordinal_position"):
        columns.setdefault((db, table), []).append((column, data_type))
    listing = oracle_listing(path)
    assert all(e.pos is not None for e in listing.events)
    by_pos = {e.pos: e for e in listing.events}
    rows = [ExpectedRow(pos, index, by_pos[pos].timestamp, by_pos[pos].server_id, r.db, r.table, r.op, r)
            for (pos, index), r in sorted(run_oracle(path).items())]
    # Every statement is one rows event, so mariadb-binlog's statement positions are our event positions.
    assert {r.pos for r in rows} == listing.rows_event_positions
    assert len(rows) == sum(listing.row_counts.values()) == 90 + 10 + 5 + 2 + 30 + 3 + 10 + 1 + 1 + 1
    return Workload(path, rows, columns, listing)
