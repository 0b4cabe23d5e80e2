"""The Delta MERGE recipe of ``docs/tarantool-cdc.md`` run for real: view=space slices of a real Tarantool 2.6
workload applied to a Delta table (delta-rs) must give ``box.space.cdc:select()`` value for value."""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
from deltalake import DeltaTable

import spark_logsource
from spark_logsource.tarantool.table.apply import apply_changes, space_spec
from tests.support.delta_space import APP_ID, apply_batch
from tests.support.servers.tarantool import WorkloadResult
from tests.support.tarantool_typed import plain_row, row_mismatches

log = logging.getLogger(__name__)


def _unpack(data: bytes) -> Any:
    from tests.support.oracle.tarantool_xlog import unpack

    return unpack(data)


def _cuts(workload: WorkloadResult) -> list[int]:
    return [int((workload.directory / f"cut{n}.lsn").read_text()) for n in (1, 2, 3)]


def _slice(workload: WorkloadResult, low: int, high: int) -> pa.Table:
    """view=space rows of the LSNs in (low, high]."""
    return spark_logsource.read("tarantool-xlog", str(workload.directory), view="space", space="cdc",
                                fromLsn=str(low + 1), toLsn=str(high + 1), mode="FAILFAST")


def _delta_rows(path: Path) -> dict[int, dict[str, Any]]:
    return {r["id"]: plain_row(r) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}


def test_seq_is_the_vclock_signature_after_each_row(cdc_workload):
    """seq rises strictly in log order, and the last row of each xlog ends at the next xlog's signature."""
    table = spark_logsource.read("tarantool-xlog", str(cdc_workload.directory), view="space", space="cdc",
                                 mode="FAILFAST")
    seqs = table.column("seq").to_pylist()
    assert None not in seqs and len(seqs) > 30
    assert all(a < b for a, b in itertools.pairwise(seqs))
    xlogs = sorted(p.name for p in cdc_workload.directory.glob("*.xlog"))
    assert len(xlogs) >= 2
    # rows of the local space (vclock component 0) sit between rows of cdc: seq counts them, lsn does not
    lsns = table.column("lsn").to_pylist()
    gaps = [(s2 - s1) - (l2 - l1) for s1, s2, l1, l2 in zip(seqs, seqs[1:], lsns, lsns[1:], strict=False)]
    assert sum(gaps) == 2  # two of the three loc:replace come between cdc rows (the third after the last)
    # one writer, no gaps: each row of any space raises the signature by one, so the seq of a row is the first
    # xlog's signature plus its number among all xlog rows (the plain rows view, counted independently)
    plain = spark_logsource.read("tarantool-xlog", str(cdc_workload.directory))
    plain = plain.filter(pa.compute.match_substring(plain.column("file"), ".xlog"))
    first = int(xlogs[0].split(".")[0])
    expected = {(r, lsn): first + i + 1 for i, (r, lsn) in enumerate(zip(
        plain.column("replica_id").to_pylist(), plain.column("lsn").to_pylist(), strict=True))}
    assert seqs == [expected[(r, lsn)] for r, lsn in zip(table.column("replica_id").to_pylist(), lsns,
                                                           strict=True)]
    # and the next xlog's name is the signature after the last row of the previous one
    by_file = plain.column("file").to_pylist()
    for name in xlogs[1:]:
        last_before = max(i for i, f in enumerate(by_file) if f.rsplit("/", 1)[-1] < name)
        assert int(name.split(".")[0]) == first + last_before + 1
    ops = set(table.column("op").to_pylist())
    assert ops == {"INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT", "TRUNCATE"}


def test_slices_merged_into_delta_equal_the_space(cdc_workload, tmp_path):
    cuts = _cuts(cdc_workload)
    spec = space_spec(str(cdc_workload.directory), "cdc")
    target = tmp_path / "cdc_delta"
    bounds = [0, *cuts]
    slices = [_slice(cdc_workload, lo, hi) for lo, hi in itertools.pairwise(bounds)]
    assert all(s.num_rows > 5 for s in slices)
    fmt = msgpack.unpackb((cdc_workload.directory / "format.mp").read_bytes(), raw=False)
    for n, changes in enumerate(slices):
        result = apply_batch(target, spec, changes)
        assert result.errors == [] and result.skipped == 0 and result.applied == changes.num_rows, n
        assert DeltaTable(str(target)).transaction_version(APP_ID) == changes.column("seq").to_pylist()[-1]
        # the table after each slice is the space as the server returned it at that point
        space = _unpack((cdc_workload.directory / f"cut{n + 1}.mp").read_bytes())
        ours = _delta_rows(target)
        assert sorted(ours) == sorted(t[0] for t in space), n
        for tup in space:
            assert row_mismatches(ours[tup[0]], tup, fmt) == [], (n, tup[0])
        if n == 1:
            # the same slice again (a retried micro-batch): detected by the high-water mark, nothing changes
            version = DeltaTable(str(target)).version()
            again = apply_batch(target, spec, changes)
            assert again.applied == 0 and again.skipped == changes.num_rows
            assert DeltaTable(str(target)).version() == version
            assert _delta_rows(target) == ours
    assert len(_delta_rows(target)) == 5  # the truncate left only the rows made after it


def test_row_guard_alone_makes_a_repeated_batch_harmless(cdc_workload):
    """Without the high-water mark, the seq stored with each row still keeps a batch applied twice exact
    (UPDATE '+' applied twice would otherwise count twice)."""
    cuts = _cuts(cdc_workload)
    spec = space_spec(str(cdc_workload.directory), "cdc")
    changes = _slice(cdc_workload, 0, cuts[0])
    first = apply_changes(spec, changes, None)
    assert first.deletes.column("id").to_pylist() == [8]
    again = apply_changes(spec, changes, first.upserts)
    # every change of a stored row is at or below its stored seq: skipped, nothing to write back
    assert again.upserts.num_rows == 0
    # key 8 (inserted then deleted in the batch) is not stored: its two changes run again and end in a delete
    on_8 = sum(1 for i in changes.column("id").to_pylist() if i == 8)
    assert on_8 == 2 and (again.applied, again.skipped) == (2, changes.num_rows - 2)
    assert again.deletes.column("id").to_pylist() == [8]


def test_apply_of_every_change_equals_state_view(cdc_workload):
    """All changes as one batch on an empty target give view=state's rows (the same replay code); the times are
    logged, not asserted."""
    spec = space_spec(str(cdc_workload.directory), "cdc")
    changes = spark_logsource.read("tarantool-xlog", str(cdc_workload.directory), view="space", space="cdc",
                                   mode="FAILFAST")
    t0 = time.perf_counter()
    applied = apply_changes(spec, changes, None)
    t1 = time.perf_counter()
    state = spark_logsource.read("tarantool-xlog", str(cdc_workload.directory), view="state", space="cdc")
    t2 = time.perf_counter()
    mine = {r["id"]: plain_row(r) for r in applied.upserts.to_pylist()}
    theirs = {r["id"]: plain_row(r) for r in state.to_pylist()}
    assert {k: {c: v for c, v in r.items() if c != "seq"} for k, r in mine.items()} == {
        k: {c: v for c, v in r.items() if not c.startswith("_")} for k, r in theirs.items()}
    log.warning("apply_changes: %d changes in %.4f s (%.0f rows/s); view=state: %.4f s (%.0f rows/s)",
                changes.num_rows, t1 - t0, changes.num_rows / (t1 - t0), t2 - t1, changes.num_rows / (t2 - t1))
