"""``view=space`` and ``view=state`` on the WAL of one master of a master-master replica set (Tarantool 2.6):
its xlogs hold its own rows and the rows relayed from the other master, each with its origin's replica id and LSN;
``seq`` orders them all, and the content rebuilt from that one WAL equals both servers' ``select()``."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from tests.support.tarantool_typed import plain_row
from tests.tarantool_cdc_stream.support import DictTarget, server_rows
from tests.tarantool_replicaset.conftest import ReplicaSet
from tests.tarantool_replicaset.oracle import wal_rows
from tests.tarantool_replicaset.servers import FIELDS, SPACE, Master

pytestmark = pytest.mark.server

KEEP = ["op", "lsn", "tsn", "replica_id", *FIELDS]


def space_view(server: Master) -> pa.Table:
    return spark_logsource.read("tarantool-xlog", str(server.directory), view="space", space=SPACE, mode="FAILFAST")


def space_id(server: Master) -> int:
    return int(server.value(f"box.space.{SPACE}.id"))


def full_vclock(server: Master) -> dict[int, int]:
    """box.info.vclock with component 0 (rows of local spaces)."""
    text = server.json("(function() local v = {} for k, l in pairs(box.info.vclock) do v[tostring(k)] = l end "
                       "return v end)()")
    return {int(k): v for k, v in text.items()} if isinstance(text, dict) else {}


def test_rows_keep_their_origin_and_seq_is_the_vclock_signature(replicaset: ReplicaSet) -> None:
    a, b = replicaset.a, replicaset.b
    view = space_view(a)
    rows = view.to_pylist()
    assert {r["replica_id"] for r in rows} == {a.replica_id(), b.replica_id()} == {1, 2}

    # the same rows, origins and LSNs, in the same order as Tarantool's own reader of A's files
    oracle, starts = wal_rows(a.directory)
    sid = space_id(a)
    ours = [(r["replica_id"], r["lsn"], r["tsn"]) for r in rows]
    assert ours == [(w.replica_id, w.lsn, w.tsn) for w in oracle if w.space_id == sid]
    assert len(starts) >= 3  # wal_max_size made several files, relayed rows among them
    assert [int(name.split(".")[0]) for name, _ in starts] == [s for _, s in starts]

    # seq: the signature after the row, folded by the oracle over every row of every space; the last one is A's
    # vclock now (component 0 included)
    signature = {(w.replica_id, w.lsn): w.signature for w in oracle}
    seqs = view.column("seq").to_pylist()
    assert seqs == [signature[(r, lsn)] for r, lsn, _ in ours]
    assert all(x < y for x, y in itertools.pairwise(seqs))
    assert oracle[-1].signature == sum(full_vclock(a).values())
    # lsn alone repeats across origins (each master counts its own); (replica_id, lsn) does not
    lsn_counts = Counter(r["lsn"] for r in rows)
    assert any(n > 1 for n in lsn_counts.values())
    assert len(set(ours)) == len(ours)
    # the two origins interleave in A's order, and both wrote multi-statement transactions
    origins = [r for r, _, _ in ours]
    assert sum(1 for x, y in itertools.pairwise(origins) if x != y) > 10
    assert {r for r, lsn, tsn in ours if tsn != lsn} == {1, 2}


def test_relayed_rows_are_the_origins_rows(replicaset: ReplicaSet) -> None:
    """B's rows in A's WAL are B's rows in B's own WAL, value for value (same LSN, TSN, op, fields), and the
    other way round."""
    a, b = replicaset.a, replicaset.b
    view_a, view_b = space_view(a).select(KEEP).to_pylist(), space_view(b).select(KEEP).to_pylist()
    for origin in (1, 2):
        in_a = [plain_row(r) for r in view_a if r["replica_id"] == origin]
        in_b = [plain_row(r) for r in view_b if r["replica_id"] == origin]
        assert in_a == in_b and len(in_a) > 100
    # each master wrote the other's rows in its own order: seq differs between the two WALs
    seq_a = {(r["replica_id"], r["lsn"]): r["seq"] for r in space_view(a).to_pylist()}
    seq_b = {(r["replica_id"], r["lsn"]): r["seq"] for r in space_view(b).to_pylist()}
    assert seq_a.keys() == seq_b.keys() and seq_a != seq_b


def _state(server: Master, directory: Master) -> dict[int, dict[str, Any]]:
    table = spark_logsource.read("tarantool-xlog", str(directory.directory), view="state", space=SPACE,
                                 mode="FAILFAST")
    return {r["id"]: {n: r[n] for n in FIELDS} for r in (plain_row(x) for x in table.to_pylist())}


def test_state_from_one_wal_equals_both_servers(replicaset: ReplicaSet) -> None:
    a, b = replicaset.a, replicaset.b
    on_a, on_b = server_rows(a, SPACE, FIELDS), server_rows(b, SPACE, FIELDS)
    assert _state(a, a) == on_a  # each WAL rebuilds its own server's content...
    assert _state(b, b) == on_b
    assert on_a == on_b and len(on_a) > 200  # ...which is the same on both (the workload's writes commute)
    assert {r["owner"] for r in on_a.values()} == {"a", "b"}


def test_apply_of_one_wal_in_seq_order_equals_both_servers(replicaset: ReplicaSet) -> None:
    a, b = replicaset.a, replicaset.b
    view = space_view(a)
    target = DictTarget(str(a.directory), SPACE)
    step = 97  # batches cut anywhere, inside transactions and between origins
    for start in range(0, view.num_rows, step):
        target.apply(view.slice(start, step))
        before = dict(target.rows)
        target.apply(view.slice(start, step))  # a batch applied twice changes nothing the second time
        assert target.rows == before
    assert target.plain(FIELDS) == server_rows(a, SPACE, FIELDS) == server_rows(b, SPACE, FIELDS)
