"""The live source (``tarantool-replication``) pointed at one master of a master-master replica set: the server
relays its own rows and those it applied from the other master, in its WAL's order, each keeping its origin's
replica id and LSN; ``view=space``'s ``seq`` there."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.registry import format_class
from spark_logsource.streaming.stream import ReadBudget
from tests.support.tarantool_live import directory_rows, read_range, strip
from tests.tarantool_cdc_stream.support import DictTarget, drain, server_rows
from tests.tarantool_replicaset.conftest import ReplicaSet
from tests.tarantool_replicaset.servers import FIELDS, SPACE, Master
from tests.tarantool_replicaset.test_space_view import space_view

pytestmark = pytest.mark.server


def _live_space(server: Master, start: dict[int, int], **options: Any) -> Any:
    position = json.dumps({str(r): v for r, v in start.items()})
    return format_class("tarantool-replication")(server.options(
        mode="FAILFAST", view="space", space=SPACE, startingPosition=position, **options)).stream()


def test_live_rows_are_the_wal_rows_of_both_origins(replicaset: ReplicaSet) -> None:
    a = replicaset.a
    end = a.vclock()
    assert set(end) == {1, 2}
    live = read_range(a, {}, end, tupleFormat="msgpack", mode="FAILFAST").to_pylist()
    files = directory_rows(a.directory, {}, end, "msgpack")
    assert {r["replica_id"] for r in live} == {1, 2}
    assert strip(live) == strip(files)  # same rows, same order, origins and LSNs kept


def _drain_space(replicaset: ReplicaSet, **options: Any) -> tuple[pa.Table, DictTarget, int]:
    a = replicaset.a
    stream = _live_space(a, replicaset.start, **options)
    target = DictTarget(str(a.directory), SPACE)
    seen: list[pa.Table] = []

    def sink(batch: pa.Table) -> None:
        seen.append(batch)
        target.apply(batch)

    budget = stream.default_budget() if options.get("maxRowsPerTrigger") else ReadBudget()
    drain(stream, stream.initial_offset(), budget, sink)
    return pa.concat_tables(seen), target, len(seen)


def test_live_space_view_whole_ranges(replicaset: ReplicaSet) -> None:
    """Ranges ending at the server's vclock (whole transactions of every origin): the changes of A's WAL in its
    order, and ``seq`` equal to the batch view's (the start vclock is A's whole vclock there)."""
    a, b = replicaset.a, replicaset.b
    rows, target, _ = _drain_space(replicaset)
    batch = [r for r in space_view(a).to_pylist()
             if r["lsn"] > replicaset.start.get(r["replica_id"], 0)]
    live = rows.to_pylist()
    assert {r["replica_id"] for r in live} == {1, 2}
    assert [(r["replica_id"], r["lsn"], r["seq"]) for r in live] == \
           [(r["replica_id"], r["lsn"], r["seq"]) for r in batch]
    assert target.plain(FIELDS) == server_rows(a, SPACE, FIELDS) == server_rows(b, SPACE, FIELDS)


def test_live_space_view_ranges_under_a_row_budget(replicaset: ReplicaSet) -> None:
    """``maxRowsPerTrigger`` with two origins advancing: a range then ends at the server's vclock (no cut the
    driver could place on the server's path), and every change of both origins comes once."""
    a = replicaset.a
    rows, _target, batches = _drain_space(replicaset, maxRowsPerTrigger=7)
    assert batches >= 1
    batch = [r for r in space_view(a).to_pylist() if r["lsn"] > replicaset.start.get(r["replica_id"], 0)]
    live = rows.to_pylist()
    assert sorted((r["replica_id"], r["lsn"]) for r in live) == sorted((r["replica_id"], r["lsn"]) for r in batch)
    assert len({(r["replica_id"], r["lsn"]) for r in live}) == len(live)


def test_live_space_view_budget_keeps_the_server_order(replicaset: ReplicaSet) -> None:
    """With a row budget, the changes still come in A's order and the copy still equals both servers."""
    a, b = replicaset.a, replicaset.b
    rows, target, _ = _drain_space(replicaset, maxRowsPerTrigger=7)
    batch = [r for r in space_view(a).to_pylist() if r["lsn"] > replicaset.start.get(r["replica_id"], 0)]
    live = rows.to_pylist()
    seqs = [r["seq"] for r in live]
    assert all(x < y for x, y in itertools.pairwise(seqs)), _first_fall(live)
    assert [(r["replica_id"], r["lsn"]) for r in live] == [(r["replica_id"], r["lsn"]) for r in batch]
    assert target.plain(FIELDS) == server_rows(a, SPACE, FIELDS) == server_rows(b, SPACE, FIELDS)


def _first_fall(rows: list[dict[str, Any]]) -> str:
    for i in range(1, len(rows)):
        if rows[i]["seq"] <= rows[i - 1]["seq"]:
            window = rows[max(0, i - 3): i + 2]
            return "seq falls: " + "; ".join(f"r{r['replica_id']} lsn {r['lsn']} tsn {r['tsn']} seq {r['seq']}"
                                             for r in window)
    return ""


def test_a_row_budget_cuts_one_advancing_origin_only() -> None:
    """One origin advancing: the budget cuts it. Two: the range ends at the server's vclock, uncut (a cut must lie
    on the server's path of vclocks, which the driver cannot see)."""
    from spark_logsource.tarantool.stream.live import cap_vclock

    assert cap_vclock({1: 10, 2: 5}, {1: 100, 2: 5}, 7) == {1: 17, 2: 5}
    assert cap_vclock({1: 10, 2: 5}, {1: 100, 2: 6}, 7) == {1: 100, 2: 6}
    assert cap_vclock({1: 10}, {1: 100}, None) == {1: 100}
