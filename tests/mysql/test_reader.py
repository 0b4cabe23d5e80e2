"""Reader options and pushed-down predicates on real binlogs: each equals filtering the whole read in Python."""

from __future__ import annotations

import datetime as dt
import functools
import json

import pytest

from spark_logsource.arrow.variant import decode_variant
from spark_logsource.filters import Predicate
from spark_logsource.mysql.read.reader import binlog_schema
from tests.support.mysql_events import FIXTURE_DIR, read_table

CRC_FILE = FIXTURE_DIR / "osheroff/mysql-bin.checksum-crc32"
SAKILA = FIXTURE_DIR / "osheroff/mysql-bin.sakila.gz"


@functools.cache
def _sakila_changes() -> list[dict]:
    return read_table(SAKILA, view="changes").to_pylist()


def _last_xid_before(pos: int) -> int:
    return max(r["pos"] for r in read_table(SAKILA, event_types=("XID",)).to_pylist() if r["pos"] < pos)


def test_schemas() -> None:
    changes = binlog_schema("changes", "variant", "_corrupt_record")
    assert changes.names == ["file", "pos", "next_pos", "timestamp", "server_id", "gtid", "xid", "database", "table",
                             "op", "row_index", "before", "after", "query", "_corrupt_record"]
    events = binlog_schema("events", "json", None)
    assert events.names == ["file", "pos", "next_pos", "timestamp", "server_id", "event_type", "event_type_code",
                            "event_size", "flags", "gtid", "database", "table", "query", "data"]
    assert str(changes.field("timestamp").type) == "timestamp[us, tz=UTC]"


def test_variant_and_json_agree() -> None:
    as_json = read_table(SAKILA, view="changes", row_format="json").to_pylist()
    as_variant = read_table(SAKILA, view="changes", row_format="variant").to_pylist()
    assert len(as_json) == len(as_variant) == 47273
    for j, v in zip(as_json[::97], as_variant[::97], strict=True):
        for column in ("before", "after"):
            if j[column] is None:
                assert v[column] is None
                continue
            decoded = decode_variant(v[column]["value"], v[column]["metadata"])
            assert json.loads(j[column]) == json.loads(json.dumps(decoded, default=str)) or \
                set(json.loads(j[column])) == set(decoded)


@pytest.mark.parametrize("options,keep", [
    ({"tables": ("sakila.pay*",)}, lambda r: r["table"] == "payment"),
    ({"databases": ("nope",)}, lambda r: False),
    ({"ops": ("insert",)}, lambda r: r["op"] == "insert"),
    ({"start_position": 500_000, "stop_position": 900_000}, lambda r: 500_000 <= r["pos"] < 900_000),
    ({"server_ids": frozenset({1})}, lambda r: r["server_id"] == 1),
    ({"event_types": ("WRITE_ROWS_V1_EVENT",)}, lambda r: True),
])
def test_option_filters_changes(options: dict, keep) -> None:
    whole = _sakila_changes()
    filtered = read_table(SAKILA, view="changes", **options).to_pylist()
    expected = [r for r in whole if keep(r)]
    if "stop_position" in options:  # reading stops there: the XID of the transaction cut by it is not read
        last_xid = _last_xid_before(options["stop_position"])
        expected = [{**r, "xid": r["xid"] if r["pos"] < last_xid else None} for r in expected]
    assert filtered == expected


def test_datetime_filter_events() -> None:
    whole = read_table(CRC_FILE).to_pylist()
    stamps = sorted({r["timestamp"] for r in whole})
    lo, hi = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    got = read_table(CRC_FILE, start_datetime=lo, stop_datetime=hi).to_pylist()
    assert got == [r for r in whole if lo <= r["timestamp"] < hi]


@pytest.mark.parametrize("predicates", [
    (Predicate("table", "=", "rental"),),
    (Predicate("op", "in", ("update", "delete")), Predicate("pos", ">", 100_000)),
    (Predicate("timestamp", ">=", dt.datetime(2013, 6, 24, 19, 15, 10, tzinfo=dt.UTC)),),
    (Predicate("database", "is_null"),),
])
def test_predicates_are_exact(predicates) -> None:
    whole = _sakila_changes()
    got = read_table(SAKILA, view="changes", predicates=predicates).to_pylist()
    assert got == [r for r in whole if all(p.matches(r[p.column]) for p in predicates)]


def test_event_type_predicate_on_events_view() -> None:
    whole = read_table(CRC_FILE).to_pylist()
    p = Predicate("event_type", "=", "XID")
    got = read_table(CRC_FILE, predicates=(p,)).to_pylist()
    assert got == [r for r in whole if r["event_type"] == "XID"] and len(got) == 60
