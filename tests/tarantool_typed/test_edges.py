"""Typed columns at the edges of their types, against what Tarantool 2.6 itself stored (``workload_edges.lua``).

Decimals with 38 digits, 20 integer digits, negative scales, signed zeros and values that do not fit
decimal(38,18); integers around 2^53 in a double column and beyond int64 in a bigint column; NaN, infinities and
-0.0; decimal arithmetic replayed by ``view=state``.  The oracles are the server's own: ``xlog.pairs()`` for
``view=space`` and ``box.space.edges:select()`` for ``view=state``; which values fit is restated by
``tests.support.tarantool_typed.fits`` with exact arithmetic.  Every Arrow API test runs on the C kernel and on
the Python reference (the ``twin`` fixture).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgpack
import pytest

import spark_logsource
from spark_logsource.tarantool.decode.columns import KernelColumnBuilder, PyColumnBuilder, column_builder
from tests.support.oracle.tarantool_xlog import dump_file, expected_row, unpack
from tests.support.servers.tarantool import TarantoolError, WorkloadResult, run_script
from tests.support.tarantool_typed import fits, plain_row, row_mismatches
from tests.support.twins import Twin

WORKLOAD = Path(__file__).resolve().parent / "workload_edges.lua"
#: The value of issue #24: 12 integer digits, which the fit check refused (a 28-digit context).
ISSUE_VALUE = Decimal("123456789012.3456")
_STATE_TUPLE_ID = re.compile(r"tuple \[(\d+),")


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> WorkloadResult:
    try:
        return run_script(WORKLOAD, tmp_path_factory.mktemp("tarantool_edges"))
    except TarantoolError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def server(edges: WorkloadResult) -> tuple[dict[int, list[Any]], list[dict[str, Any]]]:
    """``select()`` of the space at the end of the workload (by id) and its format, as the server wrote them."""
    tuples = unpack((edges.directory / "edges.mp").read_bytes())
    fmt = msgpack.unpackb((edges.directory / "edges.format.mp").read_bytes(), raw=False)
    return {t[0]: t for t in tuples}, fmt


@pytest.fixture
def impl(twin: Twin) -> Twin:
    """The decoder the reads of the test use: the C kernel, or the Python reference."""
    assert isinstance(column_builder("msgpack"), KernelColumnBuilder if twin.is_c else PyColumnBuilder)
    return twin


def _misfits(tup: list[Any], fmt: list[dict[str, Any]]) -> list[str]:
    """How our error message names each field of ``tup`` whose value has no typed cell."""
    return [f"field {i + 1} {f['name']!r} ({f['type']})" for i, f in enumerate(fmt)
            if i < len(tup) and not fits(tup[i], f["type"])]


def _read(edges: WorkloadResult, view: str) -> list[dict[str, Any]]:
    table = spark_logsource.read("tarantool-xlog", str(edges.directory), view=view, space="edges")
    return [plain_row(r) for r in table.to_pylist()]


def test_decimal_with_twelve_integer_digits_is_a_cell(impl, edges, server):
    tuples, _fmt = server
    ids = [i for i, t in tuples.items() if len(t) > 1 and t[1] == ISSUE_VALUE and t[1].as_tuple().exponent == -4]
    assert ids, "the workload stores decimal.new('123456789012.3456')"
    space = _read(edges, "space")
    assert [r["_corrupt_record"] for r in space if str(ISSUE_VALUE) in (r["_corrupt_record"] or "")] == []
    assert [r["dec"] for r in space if r["op"] == "INSERT" and r["id"] in ids] == [ISSUE_VALUE] * len(ids)
    state = {r["id"]: r for r in _read(edges, "state") if r["_corrupt_record"] is None}
    assert [state[i]["dec"] for i in ids if i in state] == [tuples[i][1] for i in ids]


def test_integer_without_an_exact_double_is_not_rounded(impl, edges, server):
    tuples, _fmt = server
    inserts = _oracle_inserts(edges)
    ints = {lsn: t[2] for lsn, t in inserts.items() if len(t) == 3 and type(t[2]) is int}
    assert {2**53, 2**53 + 1, 2**53 + 2, 2**64 - 1} <= set(ints.values())
    rows = {r["lsn"]: r for r in _read(edges, "space") if r["op"] == "INSERT"}
    for lsn, value in ints.items():
        if fits(value, "number"):
            assert (rows[lsn]["_corrupt_record"], rows[lsn]["num"]) == (None, float(value)), value
        else:
            assert rows[lsn]["num"] is None and "field 3 'num' (number)" in rows[lsn]["_corrupt_record"], value
    state = {r["id"]: r for r in _read(edges, "state") if r["_corrupt_record"] is None}
    # 2^53 + 1 made by an UPDATE '+' 1 in the log is not a double either
    assert tuples[506][2] == 2**53 + 1 and 506 not in state


def test_space_edges_equal_xlog_pairs(impl, edges, server):
    _tuples, fmt = server
    expected = []
    for f in edges.files_of(".xlog"):
        expected.extend(expected_row(r).columns for r in dump_file(f).rows)
    space_id = next(r["tuple"][0] for r in expected if r["space_id"] == 280 and r["type"] == "INSERT"
                    and r["tuple"][2] == "edges")
    expected = [r for r in expected if r["space_id"] == space_id]
    ours = _read(edges, "space")
    assert len(ours) == len(expected) > 60
    names = [f["name"] for f in fmt]
    good = bad = 0
    for mine, exp in zip(ours, expected, strict=True):
        where = (exp["lsn"], exp["type"], exp["tuple"] or exp["key"])
        assert (mine["op"], mine["lsn"]) == (exp["type"], exp["lsn"]), where
        if exp["type"] == "UPDATE":
            assert mine["_corrupt_record"] is None and mine["id"] == exp["key"][0], where
            continue
        misfits = _misfits(exp["tuple"], fmt)
        if misfits:
            bad += 1
            assert mine["_corrupt_record"] is not None, where
            assert all(m in mine["_corrupt_record"] for m in misfits), (where, mine["_corrupt_record"])
            assert all(mine[n] is None for n in names), where
        else:
            good += 1
            assert mine["_corrupt_record"] is None, (where, mine["_corrupt_record"])
            assert row_mismatches(mine, exp["tuple"], fmt) == [], where
    assert good > 40 and bad > 15


def test_state_edges_equal_select(impl, edges, server):
    tuples, fmt = server
    rows = _read(edges, "state")
    good = {r["id"]: r for r in rows if r["_corrupt_record"] is None}
    bad: dict[int, str] = {}
    for r in rows:
        if r["_corrupt_record"] is not None:
            m = _STATE_TUPLE_ID.search(r["_corrupt_record"])
            assert m is not None, r["_corrupt_record"]
            bad[int(m.group(1))] = r["_corrupt_record"]
    assert len(good) + len(bad) == len(rows)
    assert set(good) | set(bad) == set(tuples)
    for key, tup in tuples.items():
        misfits = _misfits(tup, fmt)
        if misfits:
            assert key in bad and all(m in bad[key] for m in misfits), (tup, bad.get(key))
        else:
            assert key in good, (tup, bad.get(key))
            assert row_mismatches(good[key], tup, fmt) == [], tup


def test_replayed_decimal_arithmetic_equals_tarantool(impl, edges, server):
    """UPDATE '+'/'-' on decimals (ids 501-514 of the workload): 38 digits rounded half up, doubles taken with 15
    significant digits, nothing below 1E-38; a result decimal(38,18) cannot hold is an error row."""
    tuples, fmt = server
    updated = {k: t for k, t in tuples.items() if 500 < k < 600}
    assert len(updated) >= 14
    rows = _read(edges, "state")
    good = {r["id"]: r for r in rows if r["_corrupt_record"] is None}
    for key, tup in updated.items():
        if _misfits(tup, fmt):
            assert key not in good, tup
            continue
        for name, value in zip(("dec", "sc"), (tup[1] if len(tup) > 1 else None, tup[6] if len(tup) > 6 else None),
                               strict=True):
            assert good[key][name] == value, (tup, good[key][name])
            if isinstance(value, Decimal) and name == "sc":  # a variant keeps the digits as Tarantool stored them
                assert good[key][name].as_tuple() == value.as_tuple(), tup
    assert updated[501][1] == Decimal("12345678901234567890.123456789012345679") == good[501]["dec"]
    assert updated[503][1] == Decimal("1.333333333333333") == good[503]["dec"]
    assert updated[502][6] == Decimal("99999999999999999999999999999999999999") == good[502]["sc"]


def _oracle_inserts(edges: WorkloadResult) -> dict[int, list[Any]]:
    """LSN → tuple of every INSERT into the space, as ``xlog.pairs()`` gives them."""
    rows = []
    for f in edges.files_of(".xlog"):
        rows.extend(expected_row(r).columns for r in dump_file(f).rows)
    space_id = next(r["tuple"][0] for r in rows if r["space_id"] == 280 and r["type"] == "INSERT"
                    and r["tuple"][2] == "edges")
    return {r["lsn"]: r["tuple"] for r in rows if r["space_id"] == space_id and r["type"] == "INSERT"}


def test_edges_in_spark(spark, edges, server):
    tuples, fmt = server
    path = str(edges.directory)
    inserts = _oracle_inserts(edges)
    space = (spark.read.format("tarantool-xlog").option("view", "space").option("space", "edges").load(path)
             .where("op = 'INSERT'").select("lsn", "id", "dec", "_corrupt_record").collect())
    assert sorted(r["lsn"] for r in space) == sorted(inserts)
    decimals = [r for r in space if len(inserts[r["lsn"]]) == 2 and isinstance(inserts[r["lsn"]][1], Decimal)]
    assert len(decimals) > 20
    for r in decimals:
        value = inserts[r["lsn"]][1]
        if fits(value, "decimal"):
            assert (r["_corrupt_record"], r["id"], r["dec"]) == (None, inserts[r["lsn"]][0], value), (value, r)
        else:
            assert r["dec"] is None and "field 2 'dec' (decimal)" in r["_corrupt_record"], (value, r)
    state = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "edges")
             .option("statePartitions", "2").load(path).select("id", "dec", "num", "_corrupt_record").collect())
    kept = {r["id"]: r for r in state if r["_corrupt_record"] is None}
    expected = {k for k, t in tuples.items() if not _misfits(t, fmt)}
    assert set(kept) == expected
    assert len(state) == len(tuples)
    for key in expected:
        tup = tuples[key]
        assert kept[key]["dec"] == (tup[1] if len(tup) > 1 else None), tup
    issue_ids = [k for k, t in tuples.items() if t[1:2] == [ISSUE_VALUE]]
    assert issue_ids and [kept[k]["dec"] for k in issue_ids] == [ISSUE_VALUE] * len(issue_ids)
