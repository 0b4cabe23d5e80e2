"""Every synthesized fixture segment decodes to its ``.expected.jsonl``, value for value.

The expected records were produced from YugabyteDB's own .proto definitions and semantics (see the fixtures'
README), not by this package: segment head and tail, where and why reading stops, every entry's fields, and
every write pair's decoded key and value.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import spark_logsource
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError
from spark_logsource.yugabyte.reader import walk_segment
from tests.yugabyte.conftest import Expected, all_expected, plain_hex

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ht(value: dict[str, Any] | None) -> int | None:
    return None if value is None else value["value"]


def _op(op: dict[str, Any] | None) -> tuple[int, int] | None:
    return None if op is None else (op["term"], op["index"])


def assert_schema(expected: dict[str, Any], schema_pb: dict[str, Any], version: int | None) -> None:
    assert version == expected["version"]
    assert schema_pb.get("pgschema_name", "") == expected["pgschema_name"]
    assert (schema_pb.get("table_properties") or {}).get("is_transactional", False) == expected["is_transactional"]
    cols = schema_pb["columns"]
    assert len(cols) == len(expected["columns"])
    for want, got in zip(expected["columns"], cols, strict=True):
        assert got["id"] == want["id"]
        assert got["name"] == want["name"]
        assert got["type"]["main"] == want["type"]
        for flag in ("is_key", "is_hash_key", "is_nullable"):
            assert got.get(flag, False) == want[flag], (want["name"], flag)
        assert got.get("sorting_type", 0) == want["sorting_type"]
        assert got.get("order", 0) == want["order"]
        assert got.get("pg_type_oid", 0) == want["pg_type_oid"]


@pytest.mark.parametrize("exp", all_expected(), ids=lambda e: e.name)
def test_segment_head_tail_and_end(exp: Expected) -> None:
    walk = walk_segment(str(exp.path))
    seg = exp.segment
    assert walk.info.size == seg["file_size"]
    assert walk.info.kind == seg["kind"]
    if seg["header"] is None:
        assert walk.info.header is None
    else:
        header = walk.info.header
        for name in ("major_version", "minor_version", "sequence_number", "tablet_id"):
            assert header[name] == seg["header"][name], name
        assert header.get("schema_version", 0) == seg["header"]["schema_version"]
        assert_schema(seg["header"]["schema"], header["schema"], header.get("schema_version", 0))
        assert walk.info.first_entry_offset == seg["first_entry_offset"]
    if seg["footer"] is None:
        assert walk.info.footer is None
    else:
        for name, value in seg["footer"].items():
            assert walk.info.footer.get(name) == value, name
    assert len(walk.index_blocks) == len(seg["index_blocks"])
    for want, got in zip(seg["index_blocks"], walk.index_blocks, strict=True):
        assert got == want
    end = exp.end
    if end["status"] == "corruption":
        assert walk.bad, "a bad CRC followed by valid entries must be reported"
        assert walk.bad[0].offset == end["offset"]
        assert str(exp.path) in str(walk.bad[0])
    else:
        assert not walk.bad
        assert walk.end_status == end["status"]
        assert walk.end_offset == end["offset"]
    read_before_end = [b for off, b in walk.batches if off < end["offset"]] if end["status"] == "corruption" \
        else [b for _, b in walk.batches]
    assert sum(len(b.entries) for b in read_before_end) == end["entries_read"]


def _entries_by_position(exp: Expected) -> dict[tuple[int, int], tuple[Any, Any]]:
    walk = walk_segment(str(exp.path))
    return {(off, e.entry_in_batch): (batch, e) for off, batch in walk.batches for e in batch.entries}


def assert_entry(want: dict[str, Any], batch: Any, got: Any) -> None:
    assert batch.committed_op_id == _op(want["batch_committed_op_id"])
    assert batch.mono_time == want["batch_mono_time"]
    assert (got.term, got.index) == _op(want["op_id"])
    assert got.hybrid_time == want["hybrid_time"]["value"]
    assert got.op_type == want["op_type"]
    assert (got.committed_term, got.committed_index) == _op(want["committed_op_id"])
    assert got.details.get("monotonic_counter") == want["monotonic_counter"]
    d = got.details
    if "write" in want:
        w = want["write"]
        write = d["write"]
        wb = write["write_batch"]
        assert wb["num_write_pairs"] == w["num_pairs"] == len(got.pairs)
        for name in ("request_id", "min_running_request_id", "batch_idx"):
            assert write.get(name) == w[name], name
        assert (wb.get("subtransaction") or {}).get("subtransaction_id") == w["subtransaction_id"]
        txn = w["transaction"]
        if txn is None:
            assert "transaction" not in wb and got.transaction_id is None
        else:
            t = wb["transaction"]
            assert plain_hex(t["transaction_id"]) == txn["transaction_id"] == plain_hex(got.transaction_id)
            assert t["isolation"] == txn["isolation"]
            assert t["status_tablet"] == txn["status_tablet"]
            assert t["priority"] == txn["priority"]
            assert t["start_hybrid_time"] == _ht(txn["start_hybrid_time"])
            assert t["locality"] == txn["locality"]
    if "transaction_state" in want:
        s = want["transaction_state"]
        state = d["transaction_state"]
        assert plain_hex(state["transaction_id"]) == s["transaction_id"] == plain_hex(got.transaction_id)
        assert state["status"] == s["status"] == got.transaction_status
        assert state.get("tablets", []) == s["tablets"]
        assert state.get("commit_hybrid_time") == _ht(s["commit_hybrid_time"])
        assert state.get("sealed") == s["sealed"]
        aborted = state.get("aborted")
        assert (None if aborted is None else aborted.get("set", [])) == s["aborted_subtransactions"]
    if "change_metadata" in want:
        c = want["change_metadata"]
        change = d["change_metadata_request"]
        for name in ("tablet_id", "schema_version", "new_table_name", "alter_table_id"):
            assert change[name] == c[name], name
        assert change["propagated_hybrid_time"] == _ht(c["propagated_hybrid_time"])
        assert_schema(c["schema"], change["schema"], change["schema_version"])
        assert got.schema_version == c["schema_version"]
    if "noop" in want:
        assert d.get("noop_request") == {}


@pytest.mark.parametrize("exp", [e for e in all_expected() if e.entries], ids=lambda e: e.name)
def test_every_entry_decodes_as_expected(exp: Expected) -> None:
    found = _entries_by_position(exp)
    for want in exp.entries:
        batch, got = found[(want["batch_offset"], want["entry_in_batch"])]
        assert_entry(want, batch, got)


def _rows(table: Any) -> list[dict[str, Any]]:
    out = []
    for row in table.to_pylist():
        for name in ("details", "doc_key", "value"):
            if name in row and row[name] is not None:
                row[name] = decode_variant(row[name]["value"], row[name]["metadata"])
        out.append(row)
    return out


def test_operations_view_matches_every_expected_entry(wal_dir: Any, expected_segments: list[Expected]) -> None:
    table = spark_logsource.read("yugabyte-wal", str(wal_dir), includeSuperseded=True)
    rows = _rows(table)
    good = {(r["tablet_id"], r["segment_seqno"], r["offset"], r["entry_in_batch"]): r
            for r in rows if r["_corrupt_record"] is None}
    wanted = 0
    for exp in expected_segments:
        seqno = exp.segment["header"]["sequence_number"] if exp.segment["header"] else None
        for want in exp.entries:
            wanted += 1
            r = good[(exp.segment["tablet_id"], seqno, want["batch_offset"], want["entry_in_batch"])]
            assert r["file"] == str(exp.path)
            assert r["table_id"] == exp.segment["table_id"]
            assert (r["term"], r["index"]) == _op(want["op_id"])
            ht = want["hybrid_time"]
            assert r["hybrid_time"] == ht["value"]
            assert r["physical_time"] == _EPOCH + dt.timedelta(microseconds=ht["physical_micros"])
            assert r["logical"] == ht["logical"]
            assert r["op_type"] == want["op_type"]
            assert (r["committed_term"], r["committed_index"]) == _op(want["committed_op_id"])
            assert r["superseded"] == (want["superseded_by"] is not None)
            txn = (want.get("write") or {}).get("transaction") or want.get("transaction_state") or {}
            assert plain_hex(r["transaction_id"]) == txn.get("transaction_id")
            assert r["transaction_status"] == (want.get("transaction_state") or {}).get("status")
            assert r["details"].get("monotonic_counter") == want["monotonic_counter"]
    # the only rows beyond the expected entries: the corrupt region of the damaged segment, and what follows it
    # (PERMISSIVE reads on after a bad batch; YugabyteDB itself stops there)
    corrupt = [r for r in rows if r["_corrupt_record"] is not None]
    assert len(corrupt) == 1 and corrupt[0]["offset"] == 491 and "checksum" in corrupt[0]["_corrupt_record"]
    extra = [r for r in rows if r["_corrupt_record"] is None and r["tablet_id"] == "fdae9d6b7d4d7d370c082f8c452f28aa"
             and r["offset"] > 491]
    assert len(good) == wanted + len(extra)


def test_superseded_entries_are_dropped_by_default(wal_dir: Any, expected_segments: list[Expected]) -> None:
    rows = _rows(spark_logsource.read("yugabyte-wal", str(wal_dir), mode="DROPMALFORMED"))
    superseded = {(e.segment["tablet_id"], want["op_id"]["term"], want["op_id"]["index"])
                  for e in expected_segments for want in e.entries if want["superseded_by"] is not None}
    assert len(superseded) == 2
    got = {(r["tablet_id"], r["term"], r["index"]) for r in rows}
    assert not superseded & got
    assert all(r["superseded"] is False for r in rows)


def _expected_value(want: dict[str, Any]) -> Any:
    if want["kind"] == "insert_packed":
        return want["columns"]
    if want["kind"] in ("liveness", "delete_row", "set_null"):
        return None
    (value,) = want["columns"].values()
    return value


def test_writes_view_matches_every_expected_pair(wal_dir: Any, expected_segments: list[Expected]) -> None:
    table = spark_logsource.read("yugabyte-wal", str(wal_dir), view="writes", includeSuperseded=True,
                                 mode="DROPMALFORMED")
    rows = _rows(table)
    by_key = {(r["tablet_id"], r["term"], r["index"], r["pair_index"]): r for r in rows}
    count = 0
    for exp in expected_segments:
        for want in exp.rows:
            count += 1
            r = by_key[(exp.segment["tablet_id"], want["op_id"]["term"], want["op_id"]["index"], want["pair_index"])]
            assert r["raw_key"].hex() == want["key_hex"]
            assert r["raw_value"].hex() == want["value_hex"]
            assert r["hybrid_time"] == want["hybrid_time"]["value"]
            assert plain_hex(r["transaction_id"]) == want["transaction_id"]
            assert r["superseded"] == want["superseded"]
            dk = want["doc_key"]
            assert r["doc_key"]["hash"] == dk["hash"]
            assert r["doc_key"]["hashed"] == [c["value"] for c in dk["hashed"]]
            assert r["doc_key"]["range"] == [c["value"] for c in dk["range"]]
            assert r["doc_key"]["key"] == want["key"]
            sub = want["subkey"]
            if sub is not None and sub["type"] == "kColumnId":
                assert (r["column_id"], r["column_name"]) == (sub["id"], sub["name"])
            else:
                assert (r["column_id"], r["column_name"]) == (None, None)
            assert r["kind"] == want["kind"]
            assert r["is_tombstone"] == (want["value_type"] == "kTombstone")
            assert r["value"] == _expected_value(want)
            assert r["schema_version"] == want["schema_version"]
            assert r["decode_error"] is None
    assert count > 30
    assert len(rows) >= count


def test_corrupt_segment_fails_fast_naming_file_and_offset(wal_dir: Any) -> None:
    bad = wal_dir / "table-0000400000003000800000000000400e" / "tablet-fdae9d6b7d4d7d370c082f8c452f28aa"
    with pytest.raises(CorruptDataError) as info:
        spark_logsource.read("yugabyte-wal", str(bad), mode="FAILFAST")
    assert info.value.offset == 491
    assert info.value.path is not None and info.value.path.endswith("wal-000000001")
