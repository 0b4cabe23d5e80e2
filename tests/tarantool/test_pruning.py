"""Files whose VClock range cannot hold the wanted LSNs are not read — and the answer does not change."""

from __future__ import annotations

import pytest

import spark_logsource
from spark_logsource.filters import Predicate
from spark_logsource.tarantool.format import TarantoolXlogFormat

RANGES = [(None, 5), (1, 2), (40, 60), (50, None), (255, 258), (300, 318), (317, 319), (10000, 10020), (10**9, None)]


def _rows(table) -> list[tuple]:
    cols = ["file", "offset", "lsn", "replica_id", "type"]
    return list(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


@pytest.mark.parametrize("name", ["dml", "vinyl", "txn", "blocks"])
@pytest.mark.parametrize(("low", "high"), RANGES)
def test_pruned_reads_equal_filtered_full_reads(tarantool_workloads, name, low, high) -> None:
    directory = str(tarantool_workloads[name].directory)
    options = {k: v for k, v in (("fromLsn", low), ("toLsn", high)) if v is not None}
    got = _rows(spark_logsource.read("tarantool-xlog", directory, **options))
    full = spark_logsource.read("tarantool-xlog", directory)
    want = [r for r in _rows(full) if (low is None or r[2] >= low) and (high is None or r[2] < high)]
    assert got == want


def test_pruning_skips_files_that_cannot_match(tarantool_workloads) -> None:
    directory = str(tarantool_workloads["vinyl"].directory)
    fmt = TarantoolXlogFormat({"paths": [directory]})
    files = fmt.list_files()
    xlogs = [f.uri for f in files if f.uri.endswith(".xlog")]
    assert len(xlogs) >= 3
    wanted = [Predicate("lsn", ">=", 300), Predicate("lsn", "<", 317)]
    planned = {s.uri for s in fmt.plan(files, wanted)}
    # 300..316 lives in the file starting at VClock {1: 256}; the last xlog has no upper bound (a replica
    # missing from its header may have written to it) unless the replicas are known; snapshots are never pruned
    assert [u for u in xlogs if u in planned] == [xlogs[1], xlogs[-1]]
    assert xlogs[1].endswith("00000000000000000256.xlog")
    assert all(f.uri in planned for f in files if not f.uri.endswith(".xlog"))
    planned = {s.uri for s in fmt.plan(files, [*wanted, Predicate("replica_id", "=", 1)])}
    assert [u for u in xlogs if u in planned] == [xlogs[1]]
    unpruned = {s.uri for s in fmt.plan(files, [Predicate("space_id", "=", 512)])}
    assert unpruned == {f.uri for f in files}


def test_local_space_rows_are_never_pruned_away(tarantool_workloads) -> None:
    """group_id 1 rows carry vclock component 0; ranges on lsn must still find them."""
    directory = str(tarantool_workloads["dml"].directory)
    full = spark_logsource.read("tarantool-xlog", directory)
    local = [r for r, g in zip(_rows(full), full.column("group_id").to_pylist(), strict=True) if g == 1]
    assert local, "the dml workload writes a local space"
    lsns = sorted(r[2] for r in local)
    got = _rows(spark_logsource.read("tarantool-xlog", directory, fromLsn=lsns[0], toLsn=lsns[-1] + 1))
    assert all(r in got for r in local)
