"""``spark.read.format("mysql-binlog")`` against real binlogs, checked against ``mariadb-binlog``.

The binlog is written by the session's real MariaDB (fixture ``mariadb``) with a workload over two databases,
two server ids (``SET SESSION server_id``) and pinned event times (``SET timestamp``, one hour per phase). Every
expected value comes from the server's own reader, ``mariadb-binlog -vv --base64-output=decode-rows`` (rows and
values parsed by :mod:`tests.support.oracle.mariadb_binlog`; event positions, times and server ids from its ``# at`` and
header lines, parsed here), or from the shared fixtures' MANIFEST.json — never from our reader.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mysql_workload import (
    T0,
    ExpectedRow,
    Workload,
    _at,
    oracle_listing,
)
from tests.support.spark import filter_pushdown

pytestmark = [pytest.mark.spark, pytest.mark.server]


@pytest.fixture
def pushdown(spark: Any, request: pytest.FixtureRequest) -> Iterator[bool]:
    """Run the test with Python data source filter pushdown off (the session default) or on."""
    with filter_pushdown(spark, request.param) as enabled:
        yield enabled


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
    with filter_pushdown(spark, True):
        actual = (_load(spark, workload.path, view="events")
                  .where(f"event_type IN ('WRITE_ROWS_V1', 'UPDATE_ROWS_V1', 'DELETE_ROWS_V1') AND pos >= {start}")
                  .select("pos"))
        assert_same_rows(actual, spark.createDataFrame([(p,) for p in expected], "pos long"))


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
def _manifest(fixtures_dir: Path) -> list[dict[str, Any]]:
    return json.loads((fixtures_dir / "mysql-binlog" / "MANIFEST.json").read_text())


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


def test_manifest_lists_every_fixture(fixtures_dir: Path) -> None:
    assert sorted(e["path"].removeprefix("./") for e in _manifest(fixtures_dir)) == sorted(MANIFEST_PATHS)


@pytest.mark.parametrize("rel", MANIFEST_PATHS)
def test_events_histogram_equals_manifest(spark: Any, fixtures_dir: Path, rel: str) -> None:
    """view=events, counting the file's own events (not those inside a TRANSACTION_PAYLOAD), equals MANIFEST."""
    entry = next(e for e in _manifest(fixtures_dir) if e["path"].removeprefix("./") == rel)
    expected = dict(entry["events"])
    expected.pop(IGNORABLE_UNKNOWN.get(rel, ""), None)
    events = _load(spark, fixtures_dir / "mysql-binlog" / rel, view="events")
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
def test_fixture_rows_match_mariadb_binlog(spark: Any, fixtures_dir: Path, tmp_path: Path, rel: str) -> None:
    """Row changes per (database, table, op) of every fixture mariadb-binlog can read equal its listing."""
    path = fixtures_dir / "mysql-binlog" / rel
    plain = path
    if rel.endswith(".gz"):  # mariadb-binlog reads plain files only
        import gzip

        plain = tmp_path / path.stem
        plain.write_bytes(gzip.decompress(path.read_bytes()))
    counts = oracle_listing(plain).row_counts
    actual = _load(spark, path).groupBy("database", "table", "op").count()
    assert_same_rows(actual, spark.createDataFrame([(*k, v) for k, v in counts.items()],
                                                       "database string, table string, op string, count long"))
