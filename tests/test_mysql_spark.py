"""``spark.read.format("mysql-binlog")`` against real binlogs, checked against ``mariadb-binlog``.

The binlog is written by the session's real MariaDB (fixture ``mariadb``) with a workload over two databases,
two server ids (``SET SESSION server_id``) and pinned event times (``SET timestamp``, one hour per phase). Every
expected value comes from the server's own reader, ``mariadb-binlog -vv --base64-output=decode-rows`` (rows and
values parsed by :mod:`tests.oracle.mariadb_binlog`; event positions, times and server ids from its ``# at`` and
header lines, parsed here), or from the shared fixtures' MANIFEST.json — never from our reader.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.mariadb_binlog import OracleRow, run_oracle

pytestmark = [pytest.mark.spark, pytest.mark.server]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
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


@pytest.fixture(scope="module")
def workload(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> Workload:
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


@pytest.fixture
def pushdown(spark: Any, request: pytest.FixtureRequest) -> Iterator[bool]:
    """Run the test with Python data source filter pushdown off (the session default) or on."""
    enabled: bool = request.param
    spark.conf.set(PUSHDOWN_CONF, "true" if enabled else "false")
    try:
        yield enabled
    finally:
        spark.conf.set(PUSHDOWN_CONF, "false")


def assert_same_rows(actual: Any, expected: Any) -> None:
    """The two DataFrames hold the same rows (as a multiset) with the same column names and types."""
    from chispa import assert_df_equality

    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def _load(spark: Any, path: Path, **options: str) -> Any:
    return spark.read.format("mysql-binlog").options(**options).load(str(path))


# -- row counts and values ----------------------------------------------------------------------------------------
def test_row_counts_per_table_and_op(spark: Any, workload: Workload) -> None:
    expected = Counter((r.database, r.table, r.op) for r in workload.rows)
    actual = _load(spark, workload.path).groupBy("database", "table", "op").count()
    assert_same_rows(actual, spark.createDataFrame([(*k, v) for k, v in expected.items()],
                                                       "database string, table string, op string, count long"))


_INT_TYPES = {"int": "int", "smallint": "smallint", "bigint": "bigint"}
_TEXT_TYPES = {"varchar": "string", "text": "string"}


def _oracle_value(text: str, data_type: str) -> Any:
    if text == "NULL":
        return None
    if data_type in _INT_TYPES:
        m = re.fullmatch(r"(-?\d+)(?: \((\d+)\))?", text)
        assert m is not None, text
        return int(m.group(1))  # the signed reading; unsigned columns are compared through the unsigned value
    assert text.startswith("'") and text.endswith("'"), text
    return text[1:-1]


@pytest.mark.parametrize("db_table", [("g_shop", "orders"), ("g_shop", "items"), ("g_crm", "customers")])
def test_variant_values_match_oracle(spark: Any, workload: Workload, db_table: tuple[str, str]) -> None:
    """``variant_get(before|after, '$.col', type)`` of every int and text column equals mariadb-binlog's value."""
    db, table = db_table
    cols = [(i, name, data_type) for i, (name, data_type) in enumerate(workload.columns[db_table])
            if data_type in _INT_TYPES or data_type in _TEXT_TYPES]
    unsigned = {name for _, name, _ in cols if name == "stock"}  # INT UNSIGNED: read as bigint
    sql_type = {name: "bigint" if name in unsigned else _INT_TYPES.get(t) or _TEXT_TYPES[t] for _, name, t in cols}
    select = ["pos", "row_index", "op"]
    ddl = ["pos long", "row_index int", "op string"]
    for image in ("before", "after"):
        for _, name, _ in cols:
            select.append(f"variant_get({image}, '$.{name}', '{sql_type[name]}') AS {image}_{name}")
            ddl.append(f"{image}_{name} {sql_type[name]}")
    expected = []
    for r in workload.rows:
        if (r.database, r.table) != db_table:
            continue
        values: list[Any] = [r.pos, r.row_index, r.op]
        for image in (r.row.before, r.row.after):
            for i, name, data_type in cols:
                printed = image.get(f"@{i + 1}")
                value = None if printed is None else _oracle_value(printed.text, data_type)
                if name in unsigned and value is not None and value < 0:
                    value += 1 << 32
                values.append(value)
        expected.append(tuple(values))
    assert expected
    actual = (_load(spark, workload.path).where(f"database = '{db}' AND `table` = '{table}'").selectExpr(*select))
    assert_same_rows(actual, spark.createDataFrame(expected, ", ".join(ddl)))


def test_event_header_columns_match_oracle(spark: Any, workload: Workload) -> None:
    """timestamp and server_id of every row are those mariadb-binlog prints for its event."""
    expected = [(r.pos, r.row_index, r.timestamp, r.server_id) for r in workload.rows]
    actual = _load(spark, workload.path).select("pos", "row_index", "timestamp", "server_id")
    assert_same_rows(actual, spark.createDataFrame(
        expected, "pos long, row_index int, timestamp timestamp, server_id long"))


# -- filters, with and without pushdown ---------------------------------------------------------------------------
def _middle_rows_pos(w: Workload) -> int:
    positions = sorted({r.pos for r in w.rows})
    return positions[len(positions) // 2]


FILTERS: dict[str, tuple[Callable[[Workload], str], Callable[[ExpectedRow, Workload], bool]]] = {
    "database": (lambda w: "database = 'g_crm'", lambda r, w: r.database == "g_crm"),
    "table": (lambda w: "`table` = 'items'", lambda r, w: r.table == "items"),
    "op": (lambda w: "op = 'delete'", lambda r, w: r.op == "delete"),
    "op-in": (lambda w: "op IN ('insert', 'update')", lambda r, w: r.op in ("insert", "update")),
    "server_id": (lambda w: "server_id = 2", lambda r, w: r.server_id == 2),
    "timestamp": (lambda w: f"timestamp >= TIMESTAMP '{_at(3)}' AND timestamp < TIMESTAMP '{_at(5)}'",
                  lambda r, w: T0 + 3 * 3600 <= r.timestamp.timestamp() < T0 + 5 * 3600),
    "pos": (lambda w: f"pos >= {_middle_rows_pos(w)}", lambda r, w: r.pos >= _middle_rows_pos(w)),
    "db-table-op": (lambda w: "database = 'g_shop' AND `table` = 'orders' AND op = 'update' AND server_id = 1",
                    lambda r, w: (r.database, r.table, r.op, r.server_id) == ("g_shop", "orders", "update", 1)),
}


@pytest.mark.parametrize("pushdown", [False, True], ids=["pushdown-off", "pushdown-on"], indirect=True)
@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters(spark: Any, workload: Workload, pushdown: bool, name: str) -> None:
    condition, keep = FILTERS[name]
    expected = [(r.pos, r.row_index, r.database, r.table, r.op) for r in workload.rows if keep(r, workload)]
    assert 0 < len(expected) < len(workload.rows), name
    actual = _load(spark, workload.path).where(condition(workload)).select("pos", "row_index", "database",
                                                                            "table", "op")
    assert_same_rows(actual, spark.createDataFrame(
        expected, "pos long, row_index int, database string, table string, op string"))


def test_filters_on_events_view_with_pushdown(spark: Any, workload: Workload) -> None:
    """view=events filtered on event_type and pos, pushdown on: the positions mariadb-binlog prints."""
    start = _middle_rows_pos(workload)
    expected = sorted(p for p in workload.listing.rows_event_positions if p >= start)
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        actual = (_load(spark, workload.path, view="events")
                  .where(f"event_type IN ('WRITE_ROWS_V1', 'UPDATE_ROWS_V1', 'DELETE_ROWS_V1') AND pos >= {start}")
                  .select("pos"))
        assert_same_rows(actual, spark.createDataFrame([(p,) for p in expected], "pos long"))
    finally:
        spark.conf.set(PUSHDOWN_CONF, "false")


# -- options = mariadb-binlog's filters ---------------------------------------------------------------------------
def _option_cases(w: Workload) -> list[tuple[str, dict[str, str], list[str]]]:
    # Positions of transaction starts: where a reader is meant to start or stop (mariadb-binlog started inside a
    # transaction prints its rows events without rows, lacking their TABLE_MAP).
    first_rows = min(w.listing.rows_event_positions)
    starts = sorted(e.pos for e in w.listing.events if e.is_transaction_start and e.pos > first_rows)
    mid = starts[len(starts) // 2]
    later = starts[3 * len(starts) // 4]
    assert first_rows < mid < later
    return [
        ("startPosition", {"startPosition": str(mid)}, [f"--start-position={mid}"]),
        ("stopPosition", {"stopPosition": str(mid)}, [f"--stop-position={mid}"]),
        ("start-stop", {"startPosition": str(mid), "stopPosition": str(later)},
         [f"--start-position={mid}", f"--stop-position={later}"]),
        ("startDatetime", {"startDatetime": _at(2)}, [f"--start-datetime={_at(2)}"]),
        ("stopDatetime", {"stopDatetime": _at(3)}, [f"--stop-datetime={_at(3)}"]),
        ("databases", {"databases": "g_crm"}, ["--database=g_crm"]),
        ("tables", {"tables": "g_shop.items"}, ["--database=g_shop", "--table=items"]),
        ("serverId", {"serverId": "2"}, ["--server-id=2"]),
    ]


OPTION_CASES = ["startPosition", "stopPosition", "start-stop", "startDatetime", "stopDatetime", "databases",
                "tables", "serverId"]


@pytest.mark.parametrize("case", OPTION_CASES)
def test_options_select_what_mariadb_binlog_selects(spark: Any, workload: Workload, case: str) -> None:
    """Row counts per (database, table, op) and the rows events' positions equal mariadb-binlog's with the
    corresponding command-line filter."""
    _, options, args = next(c for c in _option_cases(workload) if c[0] == case)
    oracle = oracle_listing(workload.path, *args)
    assert 0 < sum(oracle.row_counts.values()) < len(workload.rows), (case, oracle.row_counts)
    df = _load(spark, workload.path, **options)
    assert_same_rows(df.groupBy("database", "table", "op").count(),
                         spark.createDataFrame([(*k, v) for k, v in oracle.row_counts.items()],
                                               "database string, table string, op string, count long"))
    pos_by_end = {e.end_pos: e.pos for e in workload.listing.events}
    printed = {pos_by_end[end] for end in oracle.rows_event_ends if oracle.row_counts}
    assert_same_rows(df.select("pos").distinct(), spark.createDataFrame([(p,) for p in printed], "pos long"))


# -- the shared fixtures: event histograms and rows ---------------------------------------------------------------
def _manifest(shared_fixtures: Path) -> list[dict[str, Any]]:
    return json.loads((shared_fixtures / "mysql-binlog" / "MANIFEST.json").read_text())


MANIFEST_PATHS = [
    "apecloud/mysql-bin.000057", "apecloud/mysql-bin.000080", "easypost/bin-log.000001",
    "mariadb-poc/domain_id_0_mariadb-repl-bin.000001", "mariadb-poc/domain_id_0_mariadb-repl-bin.000005",
    "mariadb-poc/domain_id_0_mariadb-repl-bin.000009", "mariadb-poc/domain_id_0_mariadb-repl-bin.000010",
    "mariadb-poc/domain_id_1_mariadb-repl-bin.000002", "osheroff/mysql-bin.aurora-padding",
    "osheroff/mysql-bin.checksum-crc32", "osheroff/mysql-bin.checksum-none", "osheroff/mysql-bin.compressed",
    "osheroff/mysql-bin.sakila.gz",
]
#: Unknown event types written with the IGNORABLE flag (fixtures README: "to be skipped", issue #3).
IGNORABLE_UNKNOWN = {"osheroff/mysql-bin.aurora-padding": "type_100"}


def test_manifest_lists_every_fixture(shared_fixtures: Path) -> None:
    assert sorted(e["path"].removeprefix("./") for e in _manifest(shared_fixtures)) == sorted(MANIFEST_PATHS)


@pytest.mark.parametrize("rel", MANIFEST_PATHS)
def test_events_histogram_equals_manifest(spark: Any, shared_fixtures: Path, rel: str) -> None:
    """view=events, counting the file's own events (not those inside a TRANSACTION_PAYLOAD), equals MANIFEST."""
    entry = next(e for e in _manifest(shared_fixtures) if e["path"].removeprefix("./") == rel)
    expected = dict(entry["events"])
    expected.pop(IGNORABLE_UNKNOWN.get(rel, ""), None)
    events = _load(spark, shared_fixtures / "mysql-binlog" / rel, view="events")
    events.createOrReplaceTempView("fixture_events")
    rows = spark.sql("""
        SELECT event_type, count(*) AS n, count(_corrupt_record) AS corrupt FROM fixture_events
        WHERE event_type = 'TRANSACTION_PAYLOAD'
           OR pos NOT IN (SELECT pos FROM fixture_events WHERE event_type = 'TRANSACTION_PAYLOAD')
        GROUP BY event_type""").collect()
    assert {r.event_type: r.n for r in rows} == expected
    assert sum(r.corrupt for r in rows) == 0


#: Fixtures mariadb-binlog can read (it rejects MySQL 8 TRANSACTION_PAYLOAD events).
ORACLE_READABLE = [p for p in MANIFEST_PATHS if p not in ("apecloud/mysql-bin.000057", "osheroff/mysql-bin.compressed")]


@pytest.mark.parametrize("rel", ORACLE_READABLE)
def test_fixture_rows_match_mariadb_binlog(spark: Any, shared_fixtures: Path, tmp_path: Path, rel: str) -> None:
    """Row changes per (database, table, op) of every fixture mariadb-binlog can read equal its listing."""
    path = shared_fixtures / "mysql-binlog" / rel
    plain = path
    if rel.endswith(".gz"):  # mariadb-binlog reads plain files only
        import gzip

        plain = tmp_path / path.stem
        plain.write_bytes(gzip.decompress(path.read_bytes()))
    counts = oracle_listing(plain).row_counts
    actual = _load(spark, path).groupBy("database", "table", "op").count()
    assert_same_rows(actual, spark.createDataFrame([(*k, v) for k, v in counts.items()],
                                                       "database string, table string, op string, count long"))
