"""view=space against Tarantool's own reader (xlog.pairs) of the typed workload's xlogs, field by field."""

from __future__ import annotations

import datetime
import shutil

import pytest

import spark_logsource
from tests.support.oracle.tarantool_xlog import LuaOnly, dump_file, expected_row, plain
from tests.support.tarantool_typed import _same_plain, plain_row, row_mismatches, same_cell

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _micros(ts: datetime.datetime) -> int:
    return (ts - _EPOCH) // datetime.timedelta(microseconds=1)


def _oracle_rows(workload):
    """xlog.pairs() rows of every xlog, as our expected columns, in log order."""
    out = []
    for f in workload.files_of(".xlog"):
        out.extend(expected_row(r).columns for r in dump_file(f).rows)
    return out


def test_space_rows_equal_xlog_pairs(typed_workload, captures):
    oracle = _oracle_rows(typed_workload)
    users_id = next(r["tuple"][0] for r in oracle if r["space_id"] == 280 and r["type"] == "INSERT"
                    and r["tuple"][2] == "users")
    format_change = [r["lsn"] for r in oracle if r["space_id"] == 280 and r["type"] == "UPDATE"
                     and r["key"] == [users_id]]
    assert len(format_change) == 1
    old_fmt, new_fmt = captures[0].formats["users"], captures[-1].formats["users"]
    assert len(new_fmt) == len(old_fmt) + 1
    expected = [r for r in oracle if r["space_id"] == users_id]
    table = spark_logsource.read("tarantool-xlog", str(typed_workload.directory), view="space", space="users")
    names = table.schema.names
    assert names[:6] == ["op", "lsn", "tsn", "timestamp", "replica_id", "seq"]
    assert names[6:] == [f["name"] for f in new_fmt] + ["ops", "extra_fields", "_corrupt_record"]
    types = {f.name: str(f.type) for f in table.schema}
    assert (types["id"], types["score"], types["balance"], types["uid"], types["blob"], types["active"]) == (
        "int64", "double", "decimal128(38, 18)", "string", "binary", "bool")
    ours = [plain_row(r) for r in table.to_pylist()]
    assert len(ours) == len(expected) > 20
    ops_seen = set()
    for mine, exp in zip(ours, expected, strict=True):
        where = (exp["lsn"], exp["type"])
        assert mine["_corrupt_record"] is None, where
        assert (mine["op"], mine["lsn"], mine["tsn"], mine["replica_id"]) == (
            exp["type"], exp["lsn"], exp["tsn"], exp["replica_id"]), where
        assert _micros(mine["timestamp"]) == exp["timestamp"], where
        fmt = new_fmt if exp["lsn"] > format_change[0] else old_fmt
        ops_seen.add(exp["type"])
        if exp["type"] in ("INSERT", "REPLACE", "UPSERT"):
            assert row_mismatches(mine, exp["tuple"], fmt) == [], where
        else:
            key_field = fmt[0] if not exp["index_id"] else fmt[1]  # pk is field 1, by_name field 2
            assert same_cell(mine[key_field["name"]], exp["key"][0], key_field["type"]), where
            others = [f["name"] for f in fmt if f["name"] != key_field["name"]]
            assert all(mine[n] is None for n in others), where
        if exp["type"] in ("UPDATE", "UPSERT"):
            # xlog.pairs() gives UPSERT operations as a Lua table (no raw bytes): compared as plain values
            ops = plain(exp["ops"].lua) if isinstance(exp["ops"], LuaOnly) else exp["ops"]
            assert _same_plain(mine["ops"], ops), where
        else:
            assert mine["ops"] is None, where
        if exp["lsn"] <= format_change[0]:
            assert mine["email"] is None, where
    assert ops_seen == {"INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT"}
    assert any(r["blob"] == b"a\0b\xff" for r in ours)


def test_damaged_xlog_gives_corrupt_rows_not_guesses(typed_workload, tmp_path):
    for f in typed_workload.files:
        shutil.copy(f, tmp_path / f.name)
    first = tmp_path / typed_workload.files_of(".xlog")[0].name
    data = bytearray(first.read_bytes())
    good = spark_logsource.read("tarantool-xlog", str(tmp_path), view="space", space="kv")
    middle = len(data) * 3 // 4
    data[middle:middle + 8] = b"\xff" * 8
    first.write_bytes(bytes(data))
    damaged = spark_logsource.read("tarantool-xlog", str(tmp_path), view="space", space="kv")
    corrupt = [m for m in damaged.column("_corrupt_record").to_pylist() if m]
    assert corrupt and all(first.name in m and "at byte" in m for m in corrupt)
    assert damaged.num_rows - len(corrupt) < good.num_rows
    with pytest.raises(spark_logsource.CorruptDataError, match=first.name):
        spark_logsource.read("tarantool-xlog", str(tmp_path), view="space", space="kv", mode="FAILFAST")
