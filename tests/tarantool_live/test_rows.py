"""Live rows against the server's own files; offsets, budgets, snapshot start (real Tarantool 2.6 on loopback)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.streaming.stream import ReadBudget, offset_json
from spark_logsource.tarantool.stream.live import make_offset, parse_offset
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.tarantool_live import MIXED_WORKLOAD, directory_rows, make_stream, read_range, strip

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def mixed_range(live_server: LiveTarantool) -> tuple[dict[int, int], dict[int, int]]:
    """(start, end) vclocks around one run of MIXED_WORKLOAD."""
    start = live_server.vclock()
    live_server.eval(MIXED_WORKLOAD)
    end = live_server.vclock()
    assert end[1] - start.get(1, 0) > 90
    return start, end


@pytest.mark.parametrize("tuple_format", ["msgpack", "json", "variant"])
def test_live_rows_equal_directory_rows(live_server: LiveTarantool, mixed_range, tuple_format: str) -> None:
    start, end = mixed_range
    live = read_range(live_server, start, end, tupleFormat=tuple_format, mode="FAILFAST")
    expected = directory_rows(live_server.directory, start, end, tuple_format)
    rows = live.to_pylist()
    assert len(rows) == len(expected) > 90
    assert strip(rows) == strip(expected)
    assert {r["file"] for r in rows} == {f"tarantool://127.0.0.1:{live_server.port}"}
    assert {r["offset"] for r in rows} == {None}
    assert {r["file_type"] for r in rows} == {"XLOG"}
    types = {r["type"] for r in rows}
    assert {"INSERT", "REPLACE", "UPDATE", "UPSERT", "DELETE", "RAFT_CONFIRM"} <= types


def test_budget_cuts_keep_transactions_whole_and_rows_once(live_server: LiveTarantool, mixed_range) -> None:
    start, end = mixed_range
    stream = make_stream(live_server, tupleFormat="json", mode="FAILFAST")
    replicaset = live_server.value("box.info.cluster.uuid")
    offset = make_offset(replicaset, start)
    final = make_offset(replicaset, end)
    seen: list[dict] = []
    batches = 0
    while offset_json(offset) != offset_json(final):
        nxt = stream.latest_offset(offset, ReadBudget(max_rows=7))
        capped = parse_offset(nxt).vclock
        nxt = make_offset(replicaset, {1: min(capped[1], end[1])})
        rows = [r for s in stream.plan(offset, nxt) for b in stream.read_slice(s) for r in b.to_pylist()]
        # whole transactions: every transaction in this batch ends with its commit row here
        by_tx: dict[int, list[dict]] = {}
        for r in rows:
            by_tx.setdefault(r["tsn"], []).append(r)
        for tx_rows in by_tx.values():
            assert tx_rows[-1]["is_commit"], tx_rows
            assert [r["lsn"] for r in tx_rows] == list(range(tx_rows[0]["lsn"], tx_rows[-1]["lsn"] + 1))
        seen += rows
        offset = nxt
        batches += 1
    expected = directory_rows(live_server.directory, start, end, "json")
    assert [r["lsn"] for r in seen] == [r["lsn"] for r in expected]
    assert strip(seen) == strip(expected)
    assert batches > 5


def test_follow_from_json_vclock_then_latest_is_idle(live_server: LiveTarantool, mixed_range) -> None:
    start, end = mixed_range
    out = list(spark_logsource.follow("tarantool-replication", [], stop_when_idle=True, tupleFormat="json",
                                      **live_server.options(startingPosition=json.dumps({"1": start[1]}))))
    table = pa.Table.from_batches([b for b, _ in out])
    assert table.num_rows >= len(directory_rows(live_server.directory, start, end, "json"))
    last = out[-1][1]
    assert last["kind"] == "tarantool-replication" and list(last) == ["v", "kind", "replicaset", "vclock"]
    assert int(last["vclock"]["1"]) >= end[1]
    # resuming from the returned offset gives nothing new until the server writes
    again = list(spark_logsource.follow("tarantool-replication", [], stop_when_idle=True,
                                        **live_server.options(startingPosition=json.dumps(last))))
    assert again == []


def test_snapshot_start_gives_state_then_changes(live_server: LiveTarantool, mixed_range) -> None:
    stream = make_stream(live_server, startingPosition="snapshot", tupleFormat="json")
    first = stream.initial_offset()
    assert first.get("snapshot") is True
    end = stream.latest_offset(first, ReadBudget(max_rows=1))  # a budget never cuts the snapshot range
    server_vclock = live_server.vclock()
    assert parse_offset(end).vclock == {1: server_vclock[1]}
    live_server.eval("box.space.t:replace{1, 'after the planned end'}")
    rows = [r for s in stream.plan(first, end) for b in stream.read_slice(s) for r in b.to_pylist()]
    snap = [r for r in rows if r["file_type"] == "SNAP"]
    state = live_server.json("box.space.t:select()")
    t_rows = [json.loads(r["tuple"]) for r in snap if r["space_id"] == 512]
    assert len(t_rows) == len(state)
    # The read view is taken when the range is read: it already holds the write made after planning, and every
    # snapshot row says which vclock it reflects, so the duplicate XLOG row of the next range can be told apart.
    assert [r[0] for r in t_rows] == [r[0] for r in state]  # same keys in primary-key order
    assert [r for r in t_rows if r[0] != 11] == [r for r in state if r[0] != 11]  # (11 holds a decimal)
    assert [1, "after the planned end"] in t_rows
    read_view = {int(k): v for k, v in json.loads(snap[0]["extra"])["vclock"].items()}
    assert read_view[1] == server_vclock[1] + 1
    assert all(r["file_type"] == "SNAP" for r in rows)  # nothing after the read view is ≤ end
    nxt = stream.latest_offset(end, ReadBudget())
    later = [r for s in stream.plan(end, nxt) for b in stream.read_slice(s) for r in b.to_pylist()]
    assert [(r["file_type"], r["lsn"]) for r in later] == [("XLOG", read_view[1])]


def test_earliest_starts_at_the_oldest_checkpoint(live_server: LiveTarantool) -> None:
    stream = make_stream(live_server, startingPosition="earliest")
    offset = stream.initial_offset()
    assert parse_offset(offset).vclock == {}  # nothing collected on this server: from the first row
    table = spark_logsource.read("tarantool-replication", [], tupleFormat="json", endingPosition=json.dumps(
        {"1": 5}), **live_server.options(startingPosition="earliest"))
    assert table.column("lsn").to_pylist() == [1, 2, 3, 4, 5]


def test_batch_read_with_filters(live_server: LiveTarantool, mixed_range) -> None:
    start, end = mixed_range
    table = spark_logsource.read("tarantool-replication", [], tupleFormat="json", spaceId=512, types="INSERT",
                                 mode="FAILFAST",
                                 **live_server.options(startingPosition=json.dumps({"1": start[1]}),
                                                       endingPosition=json.dumps({"1": end[1]})))
    expected = [r for r in directory_rows(live_server.directory, start, end, "json")
                if r["space_id"] == 512 and r["type"] == "INSERT"]
    assert strip(table.to_pylist()) == strip(expected)
