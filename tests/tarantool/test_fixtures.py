"""Every real Tarantool file (shared fixtures 1.6.8 → 3.x, and files the session's tarantool 2.6 wrote) is read
completely, row for row equal to what Tarantool's own ``xlog.pairs()`` yields for it.

The oracle is the Debian tarantool 2.6 binary: a Lua script dumps, per row, the header fields and the stored
MessagePack bytes of the body's key / tuple / operations (``msgpack.encode`` of the box tuple that xlog.pairs
returns), which must equal our ``tupleFormat=msgpack`` columns byte for byte.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import UnsupportedDataError
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.decode.names import REQUEST_TYPES
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches, read_meta, xlog_schema
from tests.support.tarantool_files import (
    FIXTURES,
    UNSUPPORTED,
    b1_workload_files,
    fixture_files,
    readable_fixture_files,
)

ORACLE_LUA = r"""
local xlog = require('xlog')
local msgpack = require('msgpack')
local digest = require('digest')
local json = require('json')
local function enc(v)
    if v == nil then return box.NULL end
    return digest.base64_encode(msgpack.encode(v), {nowrap = true})
end
local out = io.open(arg[1], 'w')
for i = 2, #arg do
    local path = arg[i]
    local ok, err = pcall(function()
        for _, r in xlog.pairs(path) do
            local h, b = r.HEADER, r.BODY or {}
            out:write(json.encode({
                path = path,
                lsn = h.lsn and tostring(h.lsn) or box.NULL,
                replica_id = h.replica_id or box.NULL,
                group_id = h.group_id or box.NULL,
                type = h.type,
                tsn = h.tsn and tostring(h.tsn) or box.NULL,
                commit = h.commit or box.NULL,
                timestamp = h.timestamp and string.format('%.17g', h.timestamp) or box.NULL,
                space_id = b.space_id or box.NULL,
                index_id = b.index_id or box.NULL,
                key = enc(b.key), tuple = enc(b.tuple), operations = enc(b.operations),
            }), '\n')
        end
    end)
    if not ok then out:write(json.encode({path = path, error = tostring(err)}), '\n') end
end
out:close()
os.exit(0)
"""


def run_xlog_pairs(paths: list[Path], workdir: Path) -> dict[str, list[dict[str, Any]]]:
    """Rows of each file as the real tarantool's xlog.pairs() yields them (one tarantool process)."""
    binary = shutil.which("tarantool")
    if binary is None:
        pytest.fail("tarantool is not installed (apt-get install tarantool)")
    script = workdir / "xlog_pairs_oracle.lua"
    script.write_text(ORACLE_LUA)
    out = workdir / "xlog_pairs_oracle.jsonl"
    subprocess.run([binary, str(script), str(out), *map(str, paths)], check=True, timeout=300, cwd=workdir)
    rows: dict[str, list[dict[str, Any]]] = {str(p): [] for p in paths}
    for line in out.read_text().splitlines():
        row = json.loads(line)
        if "error" in row:
            pytest.fail(f"xlog.pairs failed on {row['path']}: {row['error']}")
        rows[row["path"]].append(row)
    return rows


@cache
def read_table(path: str, tuple_format: str = "msgpack", mode: ParseMode = ParseMode.FAILFAST) -> pa.Table:
    options = XlogReadOptions(tuple_format=tuple_format, common=CommonOptions(mode=mode))
    with open(path, "rb") as source:
        batches = list(iter_file_batches(source, path, options=options))
    return pa.Table.from_batches(batches, schema=xlog_schema(tuple_format, options.common.corrupt_column_or_none))


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


def expected_row(o: dict[str, Any]) -> dict[str, Any]:
    """Our columns as the oracle row implies them (rows.py docstring: absent lsn/replica_id/group_id → 0)."""
    lsn = int(o["lsn"]) if o["lsn"] is not None else 0
    has_tsn = o["tsn"] is not None
    type_ = o["type"] if isinstance(o["type"], str) else REQUEST_TYPES.get(o["type"], str(o["type"]))
    is_update = type_ == "UPDATE"
    return {
        "lsn": lsn,
        "replica_id": o["replica_id"] or 0,
        "group_id": o["group_id"] or 0,
        "type": type_,
        "tsn": int(o["tsn"]) if has_tsn else lsn,
        "is_commit": bool(o["commit"]) if has_tsn else True,
        "timestamp": None if o["timestamp"] is None else round(float(o["timestamp"]) * 1e6),
        "space_id": o["space_id"],
        # xlog.pairs shows the body as stored; Tarantool reads an absent index id of a request as 0
        "index_id": 0 if o["index_id"] is None and o["space_id"] is not None else o["index_id"],
        "key": o["key"],
        "tuple": None if is_update else o["tuple"],
        "ops": o["tuple"] if is_update else o["operations"],
    }


def actual_rows(table: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in table.to_pylist():
        ts = r["timestamp"]
        out.append(
            {
                "lsn": r["lsn"],
                "replica_id": r["replica_id"],
                "group_id": r["group_id"],
                "type": r["type"],
                "tsn": r["tsn"],
                "is_commit": r["is_commit"],
                "timestamp": None if ts is None else _micros(ts),
                "space_id": r["space_id"],
                "index_id": r["index_id"],
                "key": _b64(r["key"]),
                "tuple": _b64(r["tuple"]),
                "ops": _b64(r["ops"]),
            }
        )
    return out


def _micros(ts: dt.datetime) -> int:
    delta = ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


@pytest.fixture(scope="session")
def fixture_oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return run_xlog_pairs(readable_fixture_files(), tmp_path_factory.mktemp("xlog_pairs_fixtures"))


def test_fixture_folder_is_complete() -> None:
    files = fixture_files()
    assert len(files) >= 60, f"expected the shared Tarantool fixtures under {FIXTURES}"
    kinds = {p.suffix for p in files}
    assert kinds == {".xlog", ".snap", ".vylog"}


@pytest.mark.parametrize("path", readable_fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_rows_equal_xlog_pairs(path: Path, fixture_oracle: dict[str, list[dict[str, Any]]]) -> None:
    expected = [expected_row(o) for o in fixture_oracle[str(path)]]
    table = read_table(str(path))
    assert actual_rows(table) == expected
    permissive = read_table(str(path), "msgpack", ParseMode.PERMISSIVE)
    assert permissive.column("_corrupt_record").null_count == permissive.num_rows == len(expected)


@pytest.mark.parametrize("path", readable_fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_all_formats_read_without_error(path: Path) -> None:
    """Variant and JSON decoding of every value (MP_EXT included) works and agrees with the msgpack bytes."""
    from spark_logsource.arrow.variant import decode_variant

    raw = read_table(str(path), "msgpack")
    as_json = read_table(str(path), "json")
    as_variant = read_table(str(path), "variant")
    assert raw.num_rows == as_json.num_rows == as_variant.num_rows
    for column in ("tuple", "key", "ops", "extra"):
        raw_values = raw.column(column).to_pylist()
        json_values = as_json.column(column).to_pylist()
        variant_values = as_variant.column(column).to_pylist()
        for r, j, v in zip(raw_values, json_values, variant_values, strict=True):
            assert (r is None) == (j is None) == (v is None)
            if j is not None:
                # JSON text and variant encode the same decoded value (variant → Python → JSON text).
                from spark_logsource.arrow.jsontext import to_json

                assert to_json(decode_variant(v["value"], v["metadata"])) == j or _json_equal(j, v)


def _json_equal(text: str, variant: dict[str, bytes]) -> bool:
    from spark_logsource.arrow.variant import decode_variant

    def norm(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): norm(v) for k, v in x.items()}
        if isinstance(x, list):
            return [norm(v) for v in x]
        return x

    decoded = decode_variant(variant["value"], variant["metadata"])
    return norm(json.loads(text)) == norm(json.loads(json.dumps(decoded, default=str)))


@pytest.mark.parametrize("name,reason", sorted(UNSUPPORTED.items()))
def test_unsupported_fixture_headers(name: str, reason: str) -> None:
    path = next(p for p in fixture_files() if p.name == name)
    with open(path, "rb") as source, pytest.raises(UnsupportedDataError) as info:
        read_meta(source, str(path))
    assert reason in str(info.value)
    assert info.value.path == str(path)
    with open(path, "rb") as source:
        rows = pa.Table.from_batches(list(iter_file_batches(source, str(path)))).to_pylist()
    assert len(rows) == 1 and rows[0]["offset"] == info.value.offset == (0 if name == "format.bad.xlog" else 5)
    assert reason in rows[0]["_corrupt_record"]


def test_meta_headers_of_every_generation() -> None:
    by_name = {str(p.relative_to(FIXTURES)): p for p in fixture_files()}
    with open(by_name["test/xlog/reader/v12/00000000000000000000.ok.xlog"], "rb") as f:
        old = read_meta(f, "v12")
    assert (old.file_type, old.version, old.server_version) == ("XLOG", "0.12", None)
    assert old.instance_uuid == "0e82a45f-d1ff-4f19-bf2c-b815ad567dab" and old.vclock == {1: 0}
    with open(by_name["test/vinyl-luatest/gh_9965_data/00000000000000000018.xlog"], "rb") as f:
        new = read_meta(f, "3.4")
    assert (new.file_type, new.version) == ("XLOG", "0.13")
    assert new.server_version == "3.4.0-entrypoint-26-gb4b2079f16"
    assert new.vclock == {1: 18} and new.prev_vclock == {1: 12}
    with open(by_name["test/box-luatest/gh_8937_data/00000000000000000005.vylog"], "rb") as f:
        assert read_meta(f, "vylog").file_type == "VYLOG"


def test_workload_files_equal_xlog_pairs(tarantool_workloads: dict[str, Any], tmp_path: Path) -> None:
    """Files the session's real tarantool 2.6 wrote (every DML type, txns, DDL, vinyl, zstd blocks, synchro)."""
    paths = [p for result in tarantool_workloads.values() for p in result.files]
    assert paths
    oracle = run_xlog_pairs(paths, tmp_path)
    total = 0
    for path in paths:
        expected = [expected_row(o) for o in oracle[str(path)]]
        assert actual_rows(read_table(str(path))) == expected, path
        assert read_table(str(path), "variant").num_rows == len(expected)
        total += len(expected)
    assert total > 1000


def test_b1_workload_files_equal_xlog_pairs(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    paths = b1_workload_files(tmp_path_factory)
    assert {p.suffix for p in paths} >= {".xlog", ".snap"}
    oracle = run_xlog_pairs(paths, tmp_path)
    kinds: set[str] = set()
    for path in paths:
        expected = [expected_row(o) for o in oracle[str(path)]]
        got = actual_rows(read_table(str(path)))
        assert got == expected, path
        kinds |= {r["type"] for r in got}
        assert read_table(str(path), "variant").num_rows == read_table(str(path), "json").num_rows == len(got)
    assert kinds >= {"INSERT", "REPLACE", "UPDATE", "UPSERT", "DELETE"}
