"""Every row and every field of our Tarantool reader against Tarantool's own reader, ``xlog.pairs()``.

Inputs: the files of the workloads that ``tests/servers/tarantool.py`` runs on the real tarantool 2.6 (every
DML type and update op, upserts, transactions incl. one of 10 000 rows, local/temporary spaces, DDL, vinyl,
sync CONFIRM/ROLLBACK and NOP rows, every msgpack type incl. decimal/uuid/varbinary, snapshots, plain and zstd
blocks), and every Tarantool file of ``tests/fixtures/tarantool/`` that 2.6 reads. For each file and each
``tupleFormat`` (msgpack, variant, json), the rows of
:func:`spark_logsource.tarantool.read.reader.iter_file_batches` must equal the expectation built by
:mod:`tests.support.oracle.tarantool_xlog` from xlog.pairs(), in the same order and number. A failure lists file, row
index, column and both values.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.conftest import FIXTURES
from tests.support.oracle.tarantool_xlog import (
    COLUMNS,
    ExpectedRow,
    LuaOnly,
    OracleDump,
    dump_file,
    expected_row,
    json_expected,
    lua_mismatch,
    same_value,
    unpack,
    variant_expected,
)
from tests.support.servers.tarantool import WORKLOADS, WorkloadResult

TUPLE_FORMATS = ("msgpack", "variant", "json")
MAX_REPORTED = 30

TARANTOOL_FIXTURES = FIXTURES / "tarantool"
#: Shared fixture files Tarantool 2.6's xlog.pairs() refuses, and why (checked by
#: test_unreadable_fixtures_are_what_we_say); our reader must give no data rows for them either.
UNREADABLE_BY_2_6 = {
    "test/xlog/reader/format.bad.xlog": "SNOP' file type",
    "test/xlog/reader/version.bad.xlog": "version 0.07",
}
#: Damaged files xlog.pairs() reads without an error, skipping or stopping at the damage; ours are compared in
#: DROPMALFORMED mode, where the bad block is skipped too.
DAMAGED = {
    "test/xlog/reader/crc.bad.xlog",
    "test/xlog/reader/eof.bad.xlog",
    "test/replication-luatest/gh_7932_data/bad_xlog/00000000000000000000.xlog",
    "test/replication-luatest/gh_7932_data/not_finished_xlog/00000000000000000000.xlog",
}


def _fixture_files() -> list[Path]:
    if not TARANTOOL_FIXTURES.is_dir():
        return []
    return sorted(p for p in TARANTOOL_FIXTURES.rglob("*") if p.is_file() and p.suffix in (".xlog", ".snap", ".vylog"))


def read_ours(path: Path, tuple_format: str, mode: str = "FAILFAST") -> list[dict[str, Any]]:
    """Our rows of ``path`` (whole file, ``mode``), value columns decoded back to Python per ``tuple_format``."""
    from spark_logsource.arrow.variant import decode_variant
    from spark_logsource.options import CommonOptions, ParseMode
    from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches

    options = XlogReadOptions(tuple_format=tuple_format, common=CommonOptions(mode=ParseMode(mode)))
    with open(path, "rb") as source:
        batches = list(iter_file_batches(source, str(path), options=options))
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    table = table.set_column(table.schema.get_field_index("timestamp"), "timestamp",
                             table.column("timestamp").cast(pa.int64()))
    rows = table.to_pylist()
    for row in rows:
        for column in ("key", "tuple", "ops", "extra"):
            cell = row[column]
            if cell is None:
                continue
            if tuple_format == "variant":
                row[column] = decode_variant(cell["value"], cell["metadata"])
            elif tuple_format == "json":
                row[column] = json.loads(cell, parse_float=Decimal)
    return rows


def expected_cell(expected: ExpectedRow, column: str, tuple_format: str) -> Any:
    value = expected.columns[column]
    if column in ("key", "tuple", "ops") and tuple_format == "msgpack" and expected.raw[column] is not None:
        return expected.raw[column]
    if column not in ("key", "tuple", "ops", "extra") or value is None or isinstance(value, LuaOnly):
        return value
    if tuple_format == "variant":
        return variant_expected(value)
    if tuple_format == "json":
        return json_expected(value)
    return value


def _flags_ok(ours_extra: dict[str, Any], expected: ExpectedRow) -> bool:
    """xlog.pairs() shows only the COMMIT bit of the header flags (as ``commit``); other bits are ours to keep."""
    flags = ours_extra.get("flags")
    if flags is None:
        return not expected.in_transaction or not expected.columns["is_commit"]
    return isinstance(flags, int) and bool(flags & 1) == expected.columns["is_commit"]


def compare_extra(ours: Any, expected: ExpectedRow, tuple_format: str) -> bool:
    """``extra`` = the expected body/header keys, plus ``flags`` whose COMMIT bit matches ``is_commit``."""
    if tuple_format == "msgpack" and ours is not None:
        ours = unpack(ours)
    want = expected_cell(expected, "extra", tuple_format) or {}
    got = dict(ours or {})
    if "flags" in got and "flags" not in want:
        if not _flags_ok(got, expected):
            return False
        del got["flags"]
    elif expected.in_transaction and expected.columns["is_commit"]:
        return False  # a commit row of a transaction must carry flags
    if not got and not want:
        return True
    return same_value(got, want)


def compare_file(path: Path, tuple_format: str, oracle: OracleDump | None = None, mode: str = "FAILFAST") -> list[str]:
    """Mismatches between our rows of ``path`` and xlog.pairs()' (empty when they agree)."""
    oracle = oracle or dump_file(path)
    ours = read_ours(path, tuple_format, mode)
    problems: list[str] = []
    expected_count = len(oracle.rows)
    if oracle.error is None and len(ours) != expected_count:
        problems.append(f"{path}: {len(ours)} rows, xlog.pairs() has {expected_count}")
    if oracle.error is not None and len(ours) < expected_count:
        problems.append(f"{path}: {len(ours)} rows, xlog.pairs() had read {expected_count} before failing")
    for index, (row, oracle_row) in enumerate(zip(ours, oracle.rows, strict=False)):
        expected = expected_row(oracle_row)
        for column in COLUMNS:
            if column == "extra":
                if not compare_extra(row["extra"], expected, tuple_format):
                    problems.append(f"{path} row {index} column extra [{tuple_format}]: ours {row['extra']!r}, "
                                    f"expected {expected_cell(expected, 'extra', tuple_format)!r} (+ flags)")
                continue
            want = expected_cell(expected, column, tuple_format)
            got = row[column]
            if isinstance(want, LuaOnly):
                mismatch = "ours is NULL" if got is None else lua_mismatch(
                    unpack(got) if tuple_format == "msgpack" else got, want.lua)
                if mismatch:
                    problems.append(f"{path} row {index} column {column} [{tuple_format}]: {mismatch}")
            elif not same_value(got, want):
                problems.append(f"{path} row {index} column {column} [{tuple_format}]: ours {got!r}, "
                                f"expected {want!r}")
        if len(problems) >= MAX_REPORTED:
            problems.append("... (more mismatches not shown)")
            break
    return problems


def _report(problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{len(problems)} mismatch(es) with xlog.pairs():\n" + "\n".join(problems[:MAX_REPORTED + 1]))


# ------------------------------------------------------------------------------------------ workloads
@pytest.mark.server
@pytest.mark.parametrize("tuple_format", TUPLE_FORMATS)
@pytest.mark.parametrize("workload", [spec.name for spec in WORKLOADS])
def test_workload_files_match_xlog_pairs(tarantool_workloads: dict[str, WorkloadResult], workload: str,
                                         tuple_format: str) -> None:
    result = tarantool_workloads[workload]
    files = result.files
    assert files, f"workload {workload} left no log files in {result.directory}"
    problems: list[str] = []
    for path in files:
        oracle = dump_file(path)
        assert oracle.error is None, f"xlog.pairs() failed on a file tarantool 2.6 just wrote: {path}: {oracle.error}"
        problems += compare_file(path, tuple_format, oracle)
    _report(problems)


@pytest.mark.server
def test_workloads_cover_what_they_claim(tarantool_workloads: dict[str, WorkloadResult]) -> None:
    """The workloads really produced the rows the comparisons are meant to cover (per xlog.pairs())."""
    types: set[str] = set()
    groups: set[int] = set()
    ops: set[bytes] = set()
    biggest_tx: dict[int, int] = {}
    suffixes: set[str] = set()
    for result in tarantool_workloads.values():
        for path in result.files:
            suffixes.add(path.suffix)
            for row in dump_file(path).rows:
                expected = expected_row(row).columns
                types.add(expected["type"])
                groups.add(expected["group_id"])
                if expected["type"] in ("UPDATE", "UPSERT") and isinstance(expected["ops"], list):
                    ops.update(op[0].encode() for op in expected["ops"] if op and isinstance(op[0], str))
                if expected["tsn"] != expected["lsn"] or "tsn" in row.header:
                    biggest_tx[expected["tsn"]] = biggest_tx.get(expected["tsn"], 0) + 1
    assert {"INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT", "NOP", "RAFT_CONFIRM", "RAFT_ROLLBACK"} <= types
    assert {0, 1} <= groups
    assert {b"+", b"-", b"&", b"|", b"^", b":", b"!", b"#", b"="} <= ops
    assert max(biggest_tx.values()) >= 10_000
    assert suffixes == {".xlog", ".snap", ".vylog"}


@pytest.mark.server
def test_varbinary_and_string_fields_keep_their_msgpack_type(tarantool_workloads: dict[str, WorkloadResult]) -> None:
    """xlog.pairs() shows bin and str alike (Lua strings), but the space format of ``types_bin`` declares field 2
    'varbinary' and field 3 'string', and Tarantool validated every tuple against it: ours must say bytes / str."""
    seen = 0
    for path in tarantool_workloads["types"].files_of(".xlog"):
        oracle = dump_file(path)
        space_ids = {expected_row(r).columns["tuple"][0] for r in oracle.rows
                     if expected_row(r).columns["space_id"] == 280
                     and expected_row(r).columns["tuple"][2] == "types_bin"}
        for tuple_format in ("msgpack", "variant"):
            for row in read_ours(path, tuple_format):
                if row["space_id"] not in space_ids or row["type"] != "REPLACE":
                    continue
                value = unpack(row["tuple"]) if tuple_format == "msgpack" else row["tuple"]
                assert isinstance(value[1], bytes), (path, row["lsn"], value[1])
                assert isinstance(value[2], str), (path, row["lsn"], value[2])
                seen += 1
    assert seen >= 8


# ------------------------------------------------------------------------------------------ shared fixtures
@pytest.mark.server
@pytest.mark.parametrize("tuple_format", TUPLE_FORMATS)
@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: str(p.relative_to(TARANTOOL_FIXTURES)))
def test_shared_fixture_matches_xlog_pairs(path: Path, tuple_format: str) -> None:
    relative = str(path.relative_to(TARANTOOL_FIXTURES))
    oracle = dump_file(path)
    if relative in UNREADABLE_BY_2_6:
        assert oracle.error is not None and not oracle.rows, f"{relative}: xlog.pairs() now reads it"
        ours = read_ours(path, tuple_format, "PERMISSIVE")
        assert ours, f"{relative}: no corrupt-record row"
        assert all(row["_corrupt_record"] and row["lsn"] is None for row in ours), ours
        return
    assert oracle.error is None, f"{relative}: xlog.pairs() (tarantool 2.6) stopped: {oracle.error}"
    mode = "DROPMALFORMED" if relative in DAMAGED else "FAILFAST"
    _report(compare_file(path, tuple_format, oracle, mode))


def test_fixture_list_is_not_empty() -> None:
    assert len(_fixture_files()) >= 50, f"expected the Tarantool fixtures under {TARANTOOL_FIXTURES}"


@pytest.mark.server
@pytest.mark.parametrize("relative", sorted(UNREADABLE_BY_2_6))
def test_unreadable_fixtures_are_what_we_say(relative: str) -> None:
    oracle = dump_file(TARANTOOL_FIXTURES / relative)
    assert oracle.error is not None, f"{relative}: xlog.pairs() reads it; take it off UNREADABLE_BY_2_6"
    assert UNREADABLE_BY_2_6[relative] in oracle.error, oracle.error
