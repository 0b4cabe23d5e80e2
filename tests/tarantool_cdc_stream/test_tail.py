"""``view=space`` streaming on a real Tarantool 2.6 WAL directory, micro-batch by micro-batch as Spark runs them
(``latest_offset``, ``plan``, ``read_slice``, ``commit``): from the snapshot on, every change once, applied with
the sink function into a copy that must equal ``box.space.X:select()``; a format change stops the stream after
committing what came before, and a restart on the checkpointed offset goes on."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import SchemaChangeError
from spark_logsource.streaming.stream import ReadBudget
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.streaming import run_available_now
from tests.support.waiting import QUERY_TIMEOUT, STATE_TIMEOUT, expect
from tests.tarantool_cdc_stream.support import DictTarget, create_space, drain, server_rows, stream_of, transactions

pytestmark = pytest.mark.server

NAMES = ["id", "name", "n"]
OUT = pa.schema([("op", pa.string()), ("lsn", pa.int64()), ("seq", pa.int64()), ("id", pa.int64()),
                 ("name", pa.string()), ("n", pa.int64())])


def _snapshot_signature(server: LiveTarantool) -> int:
    return max(int(p.name.split(".")[0]) for p in server.directory.glob("*.snap"))


def test_from_the_snapshot_every_change_once(cdc_server: LiveTarantool) -> None:
    rng = random.Random(7)
    create_space(cdc_server, "snapc")
    transactions(cdc_server, "snapc", rng, 60, 0)
    # enough tuples for the snapshot to hold the space in several blocks (one per ~128 KiB)
    cdc_server.eval("for i = 1000, 4999 do box.space.snapc:insert{i, 'bulk ' .. i .. string.rep('.', 60), i} end")
    cdc_server.eval("box.snapshot()")
    snap = _snapshot_signature(cdc_server)
    # checkpoint_count = 1: the xlogs the snapshot holds are collected
    expect(lambda: all(int(p.name.split(".")[0]) >= snap for p in cdc_server.xlog_files()), STATE_TIMEOUT,
           "the xlogs before the snapshot to be collected")
    at_snapshot = len(server_rows(cdc_server, "snapc", NAMES))
    transactions(cdc_server, "snapc", rng, 40, 0)

    directory = str(cdc_server.directory)
    stream = stream_of(directory, view="space", space="snapc", startingPosition="snapshot",
                       maxBytesPerTrigger="10000", maxPartitionBytes="4096")
    target = DictTarget(directory, "snapc")
    seen: list[pa.Table] = []

    def sink(batch: pa.Table) -> None:
        seen.append(batch)
        target.apply(batch)

    start = stream.initial_offset()
    assert start["snapshot"]["file"] == f"{snap:020d}.snap"
    offset = drain(stream, start, stream.default_budget(), sink)
    for round_ in range(3):  # the writer goes on between polls
        transactions(cdc_server, "snapc", rng, 30, 10 * round_)
        offset = drain(stream, offset, stream.default_budget(), sink)

    assert target.plain(NAMES) == server_rows(cdc_server, "snapc", NAMES)
    rows = pa.concat_tables(seen)
    ops = rows.column("op").to_pylist()
    snapshot_rows = [i for i, op in enumerate(ops) if op == "SNAPSHOT"]
    assert len(snapshot_rows) == at_snapshot and snapshot_rows == list(range(at_snapshot))
    assert set(rows.column("seq").to_pylist()[:at_snapshot]) == {snap}
    # several micro-batches read the snapshot (maxBytesPerTrigger), and every later change came once, after it
    assert sum(1 for b in seen if "SNAPSHOT" in b.column("op").to_pylist()) >= 2
    changes = rows.slice(at_snapshot)
    keys = list(zip(changes.column("replica_id").to_pylist(), changes.column("lsn").to_pylist(), strict=True))
    assert not [k for k, n in Counter(keys).items() if n > 1]
    seqs = changes.column("seq").to_pylist()
    assert seqs == sorted(seqs) and seqs[0] > snap
    assert {"INSERT", "REPLACE", "UPDATE", "UPSERT", "DELETE"} <= set(ops)
    # the changes are exactly those the batch view reads from the xlogs after the snapshot
    import spark_logsource

    batch_view = spark_logsource.read("tarantool-xlog", directory, view="space", space="snapc", mode="FAILFAST")
    after = [s for s in batch_view.column("seq").to_pylist() if s > snap]
    assert seqs == after


def test_format_change_stops_then_restart_goes_on(cdc_server: LiveTarantool) -> None:
    rng = random.Random(11)
    create_space(cdc_server, "fmtc")
    transactions(cdc_server, "fmtc", rng, 20, 0)
    directory = str(cdc_server.directory)
    stream = stream_of(directory, view="space", space="fmtc", startingPosition="earliest")
    target = DictTarget(directory, "fmtc")
    budget = ReadBudget()
    offset = drain(stream, stream.initial_offset(), budget, target.apply)
    before = dict(target.rows)
    assert before

    # a rename is followed, a new index is harmless; then a new field the query's schema cannot name
    cdc_server.eval("box.space.fmtc:rename('fmtc2')")
    cdc_server.eval("box.space.fmtc2:create_index('by_n', {parts = {'n'}, unique = false})")
    transactions(cdc_server, "fmtc2", rng, 10, 0)
    committed_before_change = dict(server_rows(cdc_server, "fmtc2", NAMES))
    change_lsn = int(cdc_server.value("box.info.lsn")) + 1
    cdc_server.eval("box.space.fmtc2:format({{'id', 'unsigned'}, {'name', 'string'}, {'n', 'integer'}, "
                    "{'note', 'string', is_nullable = true}})")
    transactions(cdc_server, "fmtc2", rng, 5, 0)
    cdc_server.eval("for i = 1, 5 do box.space.fmtc2:update(i, {{'=', 4, 'note ' .. i}}) end")
    cdc_server.eval("box.space.fmtc2:replace{500, 'five hundred', 5, 'with a note'}")

    committed: list = []
    with pytest.raises(SchemaChangeError) as caught:  # the micro-batches up to the change, then the stop
        drain(stream, offset, budget, target.apply, committed)
    offset = committed[-1]
    assert len(committed) >= 2
    assert target.plain(NAMES) == committed_before_change
    message = str(caught.value)
    assert "schema change" in message and f"lsn {change_lsn}" in message and "'note'" in message
    assert "restart the query on its checkpoint" in message
    with pytest.raises(SchemaChangeError):  # the stop holds: asked again, the same answer
        stream.latest_offset(offset, budget)

    # the restart: a new stream (its schema read now, with the new field) from the checkpointed offset
    restarted = stream_of(directory, view="space", space="fmtc", startingPosition="earliest")
    assert "note" in restarted.schema().names
    drain(restarted, offset, budget, target.apply)
    names = [*NAMES, "note"]
    assert target.plain(names) == server_rows(cdc_server, "fmtc2", names)
    assert target.rows[500]["note"] == "with a note"



def test_follow_resumes_in_the_middle_of_the_snapshot(cdc_server: LiveTarantool) -> None:
    """follow(): an offset taken while the snapshot was being read, given back as startingPosition, goes on with
    the rest of the snapshot (not after it), and the two runs together give each row once."""
    import spark_logsource

    create_space(cdc_server, "resumec")
    cdc_server.eval("for i = 1, 4000 do box.space.resumec:insert{i, 'bulk ' .. i .. string.rep('.', 60), i} end")
    cdc_server.eval("box.snapshot()")
    cdc_server.eval("for i = 1, 50 do box.space.resumec:update(i, {{'+', 3, 1000}}) end")
    options = {"view": "space", "space": "resumec", "mode": "FAILFAST", "maxBytesPerTrigger": "8000"}
    directory = str(cdc_server.directory)
    first: list[pa.RecordBatch] = []
    resume_at = None
    run = spark_logsource.follow("tarantool-xlog", directory, stop_when_idle=True, startingPosition="snapshot",
                                 **options)
    for batch, offset in run:
        first.append(batch)
        if offset is not None and "snapshot" in offset:
            resume_at = offset
            break
    run.close()
    assert resume_at is not None and resume_at["snapshot"]["pos"] < resume_at["snapshot"]["end"]
    import json

    second = [b for b, _ in spark_logsource.follow("tarantool-xlog", directory, stop_when_idle=True,
                                                    startingPosition=json.dumps(resume_at), **options)]
    rows = pa.Table.from_batches([*first, *second]).select(["op", "id", "n"]).to_pylist()
    snapshot_ids = [r["id"] for r in rows if r["op"] == "SNAPSHOT"]
    assert sorted(snapshot_ids) == list(range(1, 4001))
    updates = [r["id"] for r in rows if r["op"] == "UPDATE"]
    assert sorted(updates) == list(range(1, 51))

def test_drop_stops_with_a_clear_error(cdc_server: LiveTarantool) -> None:
    create_space(cdc_server, "dropc")
    cdc_server.eval("for i = 1, 5 do box.space.dropc:insert{i, 'd' .. i, i} end")
    directory = str(cdc_server.directory)
    stream = stream_of(directory, view="space", space="dropc", startingPosition="earliest")
    target = DictTarget(directory, "dropc", fixed=True)
    offset = drain(stream, stream.initial_offset(), ReadBudget(), target.apply)
    cdc_server.eval("box.space.dropc:delete(5) box.space.dropc:drop()")
    committed: list = []
    with pytest.raises(SchemaChangeError, match="the space 'dropc' was dropped.*a stream of this space ends here"):
        drain(stream, offset, ReadBudget(), target.apply, committed)
    assert sorted(target.rows) == [1, 2, 3, 4]  # the delete before the drop was committed
    with pytest.raises(SchemaChangeError, match="was dropped"):
        stream.latest_offset(committed[-1], ReadBudget())


def test_other_views_and_snapshot_start_are_refused(cdc_server: LiveTarantool, tmp_path: Path) -> None:
    from spark_logsource.errors import OptionError

    with pytest.raises(OptionError, match="view=state is available in batch reads only"):
        stream_of(str(cdc_server.directory), view="state", space="t")
    with pytest.raises(OptionError, match="startingPosition=snapshot needs view=space"):
        stream_of(str(cdc_server.directory), startingPosition="snapshot")


@pytest.mark.spark
def test_spark_read_stream_from_the_snapshot(spark: Any, cdc_server: LiveTarantool, tmp_path: Path) -> None:
    """readStream of the directory with view=space from the snapshot: the snapshot's tuples, then every later
    change once, the same rows as the batch view (and the content equal to the server's)."""
    rng = random.Random(13)
    create_space(cdc_server, "sparkt")
    transactions(cdc_server, "sparkt", rng, 30, 0)
    cdc_server.eval("box.snapshot()")
    snap = _snapshot_signature(cdc_server)
    at_snapshot_time = server_rows(cdc_server, "sparkt", NAMES)
    transactions(cdc_server, "sparkt", rng, 30, 0)
    directory = str(cdc_server.directory)
    df = (spark.readStream.format("tarantool-xlog").option("view", "space").option("space", "sparkt")
          .option("startingPosition", "snapshot").option("mode", "FAILFAST").option("maxBytesPerTrigger", "4000")
          .load(directory))
    got: list[pa.Table] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        rows = [r.asDict() for r in batch_df.select("op", "lsn", "seq", "id", "name", "n").collect()]
        got.append(pa.Table.from_pylist(rows, schema=OUT))

    run_available_now(df, tmp_path / "ckpt", sink, timeout=QUERY_TIMEOUT)
    changes = pa.concat_tables([t for t in got if t.num_rows])
    ops = changes.column("op").to_pylist()
    at_snapshot = ops.count("SNAPSHOT")
    assert at_snapshot > 0 and set(changes.column("seq").to_pylist()[:at_snapshot]) == {snap}
    import spark_logsource

    batch_view = spark_logsource.read("tarantool-xlog", directory, view="space", space="sparkt", mode="FAILFAST")
    later = [r for r in batch_view.select(["op", "lsn", "seq", "id", "name", "n"]).to_pylist() if r["seq"] > snap]
    assert changes.slice(at_snapshot).to_pylist() == later
    # the snapshot's rows are the space's content when box.snapshot() ran
    assert {r["id"]: {n: r[n] for n in NAMES} for r in changes.slice(0, at_snapshot).to_pylist()} == \
        at_snapshot_time
