"""Every notebook runs on the shipped samples, cell by cell, and every cell's output is checked for its values.

Databricks source notebooks (``notebooks/*.py``) are executed with ``spark`` and ``display`` from this harness; their
Jupyter twins (``.ipynb``) must hold the same cells (regenerate them with ``python -m tests.support.notebooks``).
Each code cell has a check below (a new cell without one fails the test): the DataFrames it displays and what it
prints are compared with what the databases' own readers say about the same sample files (Tarantool's
``xlog.pairs()``, ``mariadb-binlog -vv``) or, for views those tools do not have (typed spaces, a space's state),
with the Arrow API (``spark_logsource.read``, no Spark). Nothing expected is copied from a notebook's output.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.support.notebooks import (
    databricks_notebooks,
    ipynb_text,
    mariadb_event_positions,
    mariadb_rows,
    mariadb_statements,
    parse_databricks,
    parse_ipynb,
    tarantool_rows,
    unquote,
)
from tests.support.oracle.tarantool_xlog import LuaOnly, plain

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
BINLOG = SAMPLES / "mysql" / "full-image.000001"
TYPED = SAMPLES / "tarantool" / "typed"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NOTEBOOKS = databricks_notebooks()
DML = ("INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT")
#: Tarantool's xlog block magics (docs/formats/tarantool-xlog.md): plain rows and zstd rows.
BLOCK_MAGICS = (b"\xd5\xba\x0b\xab", b"\xd5\xba\x0b\xba")


@dataclass
class CellRun:
    """What one code cell did: the DataFrames it displayed (columns and rows) and what it printed."""

    index: int
    shown: list[tuple[list[str], list[dict[str, Any]]]] = field(default_factory=list)
    figures: int = 0
    printed: str = ""


def run_notebook(spark, path: Path) -> tuple[list[CellRun], dict[str, Any]]:
    """Execute the code cells of ``path`` in one namespace; record each cell's displays and prints."""
    runs: list[CellRun] = []

    def display(obj):
        if hasattr(obj, "collect"):
            runs[-1].shown.append((list(obj.columns), [r.asDict(recursive=True) for r in obj.limit(1000).collect()]))
        else:
            runs[-1].figures += 1

    namespace = {"spark": spark, "display": display, "__name__": "__main__"}
    cells = [c for c in parse_databricks(path.read_text()) if c.kind == "code"]
    for i, cell in enumerate(cells):
        runs.append(CellRun(i))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(cell.source, f"{path.name}[cell {i}]", "exec"), namespace)
        runs[-1].printed = out.getvalue()
    return runs, namespace


def only(run: CellRun, n: int = 1) -> list[tuple[list[str], list[dict[str, Any]]]]:
    assert len(run.shown) == n, f"cell {run.index}: {len(run.shown)} displays, expected {n}"
    for columns, rows in run.shown:
        assert rows, f"cell {run.index}: display() of an empty DataFrame ({columns})"
    return run.shown


def workload_of(file: str) -> str:
    return Path(file).parent.name


def block_start(data: bytes, pos: int) -> int:
    """The start of the xlog block holding byte ``pos``: the last block magic at or before it."""
    return max(data.rfind(magic, 0, pos + 1) for magic in BLOCK_MAGICS)


# -- replication_logs ------------------------------------------------------------------------------------------
def _rl_setup(run: CellRun, ns: dict[str, Any]) -> None:
    assert ns["SAMPLES"] == str(SAMPLES)
    assert f"logs from {SAMPLES}" in run.printed
    assert not run.shown


def _rl_per_space(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["workload", "space_id", "type", "rows", "first_lsn", "last_lsn"]
    groups: dict[tuple, list[int]] = collections.defaultdict(list)
    for wal_dir in sorted((SAMPLES / "tarantool").iterdir()):
        for row in tarantool_rows(wal_dir):
            if row["space_id"] is not None and row["space_id"] >= 512:
                groups[(wal_dir.name, row["space_id"], row["type"])].append(row["lsn"])
    expected = [{"workload": w, "space_id": s, "type": t, "rows": len(lsns), "first_lsn": min(lsns),
                 "last_lsn": max(lsns)} for (w, s, t), lsns in sorted(groups.items())]
    assert rows == expected


def _rl_tuples(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["lsn", "timestamp", "type", "id", "name"]
    expected = [(r["lsn"], r["type"], r["tuple"][0], r["tuple"][1])
                for r in tarantool_rows(SAMPLES / "tarantool" / "dml")
                if r["space_id"] == 512 and r["type"] in ("INSERT", "REPLACE")]
    assert sorted((r["lsn"], r["type"], r["id"], r["name"]) for r in rows) == sorted(expected)
    assert all(r["timestamp"] is not None for r in rows)


def _rl_mysql(run: CellRun, ns: dict[str, Any]) -> None:
    (counts_cols, counts), (cols, updates) = only(run, 2)
    oracle = mariadb_rows(BINLOG)
    per_table = collections.Counter((r["db"], r["table"], r["op"]) for r in oracle)
    assert counts_cols == ["database", "table", "op", "count"]
    assert {(r["database"], r["table"], r["op"]): r["count"] for r in counts} == per_table
    assert cols == ["timestamp", "gtid", "id", "qty_before", "qty_after", "note_before", "note_after", "query"]
    # shop.orders: @1 id, @3 qty, @8 note (samples/make_mysql_samples.sh)
    expected = sorted((int(r["before"]["@1"]), int(r["before"]["@3"]), int(r["after"]["@3"]),
                       unquote(r["before"]["@8"]), unquote(r["after"]["@8"]))
                      for r in oracle if r["table"] == "orders" and r["op"] == "update")
    assert [(r["id"], r["qty_before"], r["qty_after"], r["note_before"], r["note_after"]) for r in updates] == expected
    statement = next(s for s in mariadb_statements(BINLOG) if s.startswith("UPDATE shop.orders"))
    assert {r["query"] for r in updates} == {statement}
    assert len({r["gtid"] for r in updates}) == 1 and all(r["timestamp"] for r in updates)


def _rl_plot(run: CellRun, ns: dict[str, Any]) -> None:
    assert run.figures == 1 and not run.shown
    rates = ns["rates"]
    mysql_rate = rates["MySQL row changes per table"]
    assert int(mysql_rate.to_numpy().sum()) == len(mariadb_rows(BINLOG))
    assert set(mysql_rate.columns) == {f"{r['db']}.{r['table']}" for r in mariadb_rows(BINLOG)}
    spaces = spark_logsource.read("tarantool-xlog", str(TYPED), view="state", space="_space").to_pydict()
    names = dict(zip(spaces["id"], spaces["name"], strict=True))
    changes = collections.Counter(names[r["space_id"]] for r in tarantool_rows(TYPED)
                                  if r["type"] in DML and r["space_id"] in names)
    tarantool_rate = rates["Tarantool changes per space"]
    assert {c: int(tarantool_rate[c].sum()) for c in tarantool_rate.columns} == dict(changes)
    assert f"plot written to {ns['plot_path']}" in run.printed


def _rl_damaged(run: CellRun, ns: dict[str, Any]) -> None:
    (xcols, xrows), (bcols, brows) = only(run, 2)
    assert (xcols, bcols) == (["file", "offset", "_corrupt_record"], ["file", "pos", "_corrupt_record"])
    damaged = Path(ns["damaged"])
    original = SAMPLES / "tarantool" / "txn" / "00000000000000000000.xlog"
    data = original.read_bytes()
    bad_block = block_start(data, len(data) // 2)
    assert [(r["file"], r["offset"]) for r in xrows] == [(str(damaged / original.name), bad_block)]
    assert f"at byte {bad_block}: block checksum mismatch" in xrows[0]["_corrupt_record"]
    whole = spark_logsource.read("tarantool-xlog", str(original)).to_pydict()
    assert len(whole["lsn"]) == len(tarantool_rows(original.parent, original.name))
    good = sum(1 for offset in whole["offset"] if offset != bad_block)
    assert f"good Tarantool rows still read: {good}\n" in run.printed
    assert 0 < good < len(whole["lsn"])
    middle = BINLOG.stat().st_size // 2
    bad_event = max(p for p in mariadb_event_positions(BINLOG) if p <= middle)
    assert [(r["file"], r["pos"]) for r in brows] == [(str(damaged / "binlog.000001"), bad_event)]
    assert f"at byte {bad_event}: CRC32 mismatch" in brows[0]["_corrupt_record"]


def _rl_failfast(run: CellRun, ns: dict[str, Any]) -> None:
    data = (SAMPLES / "tarantool" / "txn" / "00000000000000000000.xlog").read_bytes()
    path = Path(ns["damaged"]) / "00000000000000000000.xlog"
    assert re.search(rf"^FAILFAST: .*ChecksumError: {re.escape(str(path))} at byte "
                     rf"{block_start(data, len(data) // 2)}: block checksum mismatch", run.printed, re.M), run.printed


# -- typed_spaces ----------------------------------------------------------------------------------------------
def _arrow(**options: Any) -> list[dict[str, Any]]:
    """The Arrow API's rows (no Spark) for the typed samples."""
    return spark_logsource.read("tarantool-xlog", str(TYPED), **options).to_pylist()


def _users_oracle() -> tuple[int, int, list[dict[str, Any]]]:
    """users' space id, the LSN of its last definition change, and its rows, from xlog.pairs()."""
    rows = tarantool_rows(TYPED)
    snap = tarantool_rows(TYPED, ".snap")
    space_id = next(r["tuple"][0] for r in rows + snap if r["space_id"] == 280 and r["tuple"]
                    and r["tuple"][2] == "users")
    change = max(r["lsn"] for r in rows if r["space_id"] == 280
                 and ((r["key"] or [None])[0] == space_id or (r["tuple"] or [None])[0] == space_id))
    return space_id, change, [r for r in rows if r["space_id"] == space_id and r["type"] in DML]


def _ts_setup(run: CellRun, ns: dict[str, Any]) -> None:
    assert ns["WAL_DIR"] == str(TYPED) and not run.shown


def _ts_users(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["op", "lsn", "timestamp", "id", "name", "age", "score", "balance", "uid", "email", "ops"]
    assert "|-- email: string" in run.printed and "|-- balance: decimal(38,18)" in run.printed
    _, _, oracle = _users_oracle()
    assert [(r["lsn"], r["op"]) for r in rows] == [(r["lsn"], r["type"]) for r in oracle]
    for ours, theirs in zip(rows, oracle, strict=True):
        if theirs["type"] in ("INSERT", "REPLACE"):
            assert (ours["id"], ours["name"], ours["age"]) == tuple(theirs["tuple"][:3])
        else:  # UPDATE / DELETE / UPSERT: the key (UPSERT: the tuple to insert) gives the id
            assert ours["id"] == (theirs["key"] or theirs["tuple"])[0]


def _ts_aggregates(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["op", "changes", "balance_written", "max_score", "rows_with_email"]
    users = _arrow(view="space", space="users")
    expected = []
    for op in sorted({u["op"] for u in users}):
        mine = [u for u in users if u["op"] == op]
        balances = [u["balance"] for u in mine if u["balance"] is not None]
        scores = [u["score"] for u in mine if u["score"] is not None]
        expected.append({"op": op, "changes": len(mine), "balance_written": sum(balances, Decimal(0)) if balances
                         else None, "max_score": max(scores) if scores else None,
                         "rows_with_email": sum(u["email"] is not None for u in mine)})
    assert rows == expected
    assert sum(r["changes"] for r in rows) == len(_users_oracle()[2])


def _ts_format_change(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    space_id, change, oracle = _users_oracle()
    assert f"users is space {space_id}; its format changed at LSN {change}\n" in run.printed
    assert columns == ["lsn", "op", "id", "name", "email", "after_format_change"]
    written = [r for r in oracle if r["type"] in ("INSERT", "REPLACE", "UPSERT")]
    email_field = 13  # users:format() appended email as the 14th field (samples/make_tarantool_samples.sh)
    assert [(r["lsn"], r["op"], r["id"], r["name"], r["email"], r["after_format_change"]) for r in rows] == [
        (r["lsn"], r["type"], r["tuple"][0], r["tuple"][1],
         r["tuple"][email_field] if r["lsn"] > change and len(r["tuple"]) > email_field else None, r["lsn"] > change)
        for r in written]
    assert any(r["email"] for r in rows) and not any(r["email"] for r in rows if not r["after_format_change"])


def _ts_ops(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["lsn", "op", "id", "ops"]
    _, _, oracle = _users_oracle()
    # UPSERT operations come from xlog.pairs() as a Lua table only (not a tuple with its raw bytes)
    expected = [(r["lsn"], r["type"], plain(r["ops"].lua) if isinstance(r["ops"], LuaOnly) else r["ops"])
                for r in oracle if r["type"] in ("UPDATE", "UPSERT")]
    assert [(r["lsn"], r["op"], json.loads(r["ops"])) for r in rows] == expected


def _ts_state(run: CellRun, ns: dict[str, Any]) -> None:
    (now_cols, now), (before_cols, before) = only(run, 2)
    _, change, _ = _users_oracle()
    strip = {"_corrupt_record"}
    for cols, rows, options in [(now_cols, now, {}), (before_cols, before, {"asOfLsn": change - 1})]:
        arrow = sorted(_arrow(view="state", space="users", **options), key=lambda r: r["id"])
        assert cols == [c for c in arrow[0]], options
        assert [(r["id"], r["name"], r["age"]) for r in rows] == [(r["id"], r["name"], r["age"]) for r in arrow]
    assert "email" in now_cols and "email" not in before_cols and strip <= set(now_cols)
    assert {r["id"] for r in now} != {r["id"] for r in before}


def _ts_diff(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    assert columns == ["id", "change", "name_before", "name_now", "age_before", "age_now", "email"]
    _, change, _ = _users_oracle()
    now = {r["id"]: r for r in _arrow(view="state", space="users")}
    then = {r["id"]: r for r in _arrow(view="state", space="users", asOfLsn=change - 1)}
    common = [c for c in then[next(iter(then))] if c in now[next(iter(now))] and c not in ("id", "_corrupt_record")]

    def label(key: int) -> str:
        if key not in then:
            return "inserted"
        if key not in now:
            return "deleted"
        return "updated" if any(then[key][c] != now[key][c] for c in common) else "same"

    assert [(r["id"], r["change"]) for r in rows] == [(k, label(k)) for k in sorted(now.keys() | then.keys())]
    assert {r["change"] for r in rows} >= {"inserted", "updated", "same"}


def _ts_orders(run: CellRun, ns: dict[str, Any]) -> None:
    (op_cols, ops), (cols, updates) = only(run, 2)
    assert op_cols == ["op", "count"]
    assert "|-- after: struct" in run.printed and "|-- source: struct" in run.printed
    oracle = [r for r in mariadb_rows(BINLOG) if (r["db"], r["table"]) == ("shop", "orders")]
    letters = {"insert": "c", "update": "u", "delete": "d"}
    assert {r["op"]: r["count"] for r in ops} == collections.Counter(letters[r["op"]] for r in oracle)
    assert cols == ["id", "qty_before", "qty_after", "note_before", "note_after", "gtid"]
    assert [(r["id"], r["qty_before"], r["qty_after"], r["note_before"], r["note_after"]) for r in updates] == sorted(
        (int(r["after"]["@1"]), int(r["before"]["@3"]), int(r["after"]["@3"]), unquote(r["before"]["@8"]),
         unquote(r["after"]["@8"])) for r in oracle if r["op"] == "update")


def _ts_damaged(run: CellRun, ns: dict[str, Any]) -> None:
    ((columns, rows),) = only(run)
    damaged = Path(ns["damaged_dir"])
    assert columns == ["_corrupt_record"] and len(rows) == 1
    first = sorted(TYPED.glob("*.xlog"))[0]
    data = first.read_bytes()
    bad_block = block_start(data, len(data) * 3 // 4)
    assert rows[0]["_corrupt_record"].startswith(f"{damaged / first.name} at byte {bad_block}: ")
    good = spark_logsource.read("tarantool-xlog", str(damaged), view="space", space="kv",
                                mode="DROPMALFORMED").num_rows
    assert f"good kv rows still read: {good}\n" in run.printed
    assert 0 < good < len(_arrow(view="space", space="kv"))


CHECKS: dict[str, list[Callable[[CellRun, dict[str, Any]], None]]] = {
    "replication_logs": [_rl_setup, _rl_per_space, _rl_tuples, _rl_mysql, _rl_plot, _rl_damaged, _rl_failfast],
    "typed_spaces": [_ts_setup, _ts_users, _ts_aggregates, _ts_format_change, _ts_ops, _ts_state, _ts_diff,
                     _ts_orders, _ts_damaged],
}


def test_there_are_notebooks_in_both_formats():
    assert {p.stem for p in NOTEBOOKS} == set(CHECKS)
    for path in NOTEBOOKS:
        assert path.with_suffix(".ipynb").is_file(), f"{path.name} has no .ipynb twin"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_twin_has_the_same_cells(path):
    cells = parse_databricks(path.read_text())
    twin = path.with_suffix(".ipynb").read_text()
    assert twin == ipynb_text(cells), "stale .ipynb: run python -m tests.support.notebooks"
    assert [c.source for c in parse_ipynb(twin) if c.kind == "code"] == [c.source for c in cells if c.kind == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_install_cell_names_a_volume_wheel(path):
    """The notebooks install the wheel built from this repository (no package index has it), not ``[spark]``."""
    (magic,) = [c.source for c in parse_databricks(path.read_text()) if c.kind == "magic"]
    assert re.fullmatch(r"%pip install /Volumes/[^/\s]+/[^/\s]+/[^/\s]+/spark_logsource-[^/\s]+\.whl", magic), magic


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_cells_show_the_samples_values(spark, path, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_LOGSOURCE_SAMPLES", str(SAMPLES))
    monkeypatch.setenv("SPARK_LOGSOURCE_OUTPUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(REPO / "notebooks")
    runs, namespace = run_notebook(spark, path)
    checks = CHECKS[path.stem]
    assert len(runs) == len(checks), f"{path.name}: {len(runs)} code cells, {len(checks)} checks: add one per cell"
    for run, check in zip(runs, checks, strict=True):
        check(run, namespace)
    saves = sum(c.source.count(".savefig(") for c in parse_databricks(path.read_text()) if c.kind == "code")
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) == saves
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, png
    import matplotlib.pyplot as plt

    plt.close("all")
