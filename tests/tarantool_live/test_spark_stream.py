"""``spark.readStream.format("tarantool-replication")`` against a real Tarantool 2.6: availableNow into a
foreachBatch sink, exactly-once across a crash in the sink and a restart on the same checkpoint, and a batch read
of a vclock range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.streaming import run_available_now
from tests.support.tarantool_live import directory_rows

pytestmark = [pytest.mark.spark, pytest.mark.server]

KEYS = ("lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple")


def _spark_options(server: LiveTarantool, **extra: Any) -> dict[str, str]:
    return {k: str(v) for k, v in server.options(tupleFormat="json", **extra).items()}


def _run(spark: Any, server: LiveTarantool, checkpoint: Path, sink: Any, **options: Any) -> None:
    df = spark.readStream.format("tarantool-replication").options(**_spark_options(server, **options)).load()
    run_available_now(df, checkpoint, sink, timeout=180)


def _row_key(row: dict) -> tuple:
    return tuple(row[k] for k in KEYS)


def test_available_now_into_foreach_batch(spark: Any, live_server: LiveTarantool, tmp_path: Path) -> None:
    start = live_server.vclock()
    live_server.eval("for i = 1, 30 do box.space.t:replace{3000 + i, 'stream'} end "
                     "box.begin() for i = 1, 5 do box.space.t:replace{3100 + i, 'tx'} end box.commit()")
    end = live_server.vclock()
    seen: list[tuple[int, list[dict]]] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        seen.append((batch_id, [r.asDict() for r in batch_df.select(*KEYS, "file", "file_type").collect()]))

    _run(spark, live_server, tmp_path / "ckpt", sink, startingPosition=json.dumps({"1": start[1]}))
    rows = [r for _, batch in seen for r in batch]
    expected = directory_rows(live_server.directory, start, end, "json")
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in expected]
    assert {r["file"] for r in rows} == {f"tarantool://127.0.0.1:{live_server.port}"}
    assert {r["file_type"] for r in rows} == {"XLOG"}


class SinkCrash(RuntimeError):
    pass


def test_exactly_once_across_a_crash_and_restart(spark: Any, live_server: LiveTarantool, tmp_path: Path) -> None:
    start = live_server.vclock()
    live_server.eval("for i = 1, 60 do box.space.t:replace{4000 + i, i} end "
                     "box.begin() for i = 1, 9 do box.space.t:replace{4100 + i, 'tx'} end box.commit()")
    out = tmp_path / "sink"
    out.mkdir()
    checkpoint = tmp_path / "ckpt"

    def sink_factory(crash_at: int | None):
        def sink(batch_df: Any, batch_id: int) -> None:
            rows = [r.asDict() for r in batch_df.select(*KEYS).orderBy("lsn").collect()]
            if batch_id == crash_at:
                (out / f"failed_{batch_id}.json").write_text(json.dumps(rows))
                raise SinkCrash(f"sink fails on batch {batch_id}")
            (out / f"batch_{batch_id}.json").write_text(json.dumps(rows))  # idempotent per batch id

        return sink

    options = {"startingPosition": json.dumps({"1": start[1]}), "maxRowsPerTrigger": 20}
    with pytest.raises(Exception, match="sink fails on batch 2"):
        _run(spark, live_server, checkpoint, sink_factory(crash_at=2), **options)
    assert sorted(p.name for p in out.iterdir()) == ["batch_0.json", "batch_1.json", "failed_2.json"]
    live_server.eval("for i = 1, 7 do box.space.t:replace{4200 + i, 'after the crash'} end")
    end = live_server.vclock()
    _run(spark, live_server, checkpoint, sink_factory(crash_at=None), **options)

    batches = sorted((int(p.stem.split("_")[1]), json.loads(p.read_text())) for p in out.glob("batch_*.json"))
    assert [b for b, _ in batches] == list(range(len(batches))) and len(batches) >= 4  # 76 rows, 20 a batch
    # the re-run batch is the batch that failed, row for row
    assert json.loads((out / "failed_2.json").read_text()) == dict(batches)[2]
    rows = [r for _, batch in batches for r in batch]
    expected = directory_rows(live_server.directory, start, end, "json")
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in expected]  # every row once, in commit order
    for _, batch in batches:  # whole transactions per batch
        assert batch and batch[-1]["is_commit"]


def test_batch_read_of_a_vclock_range(spark: Any, live_server: LiveTarantool) -> None:
    start = live_server.vclock()
    live_server.eval("for i = 1, 12 do box.space.t:replace{5000 + i, 'batch'} end")
    end = live_server.vclock()
    df = (spark.read.format("tarantool-replication")
          .options(**_spark_options(live_server, startingPosition=json.dumps({"1": start[1]}),
                                    endingPosition=json.dumps({"1": end[1]}))).load())
    rows = [r.asDict() for r in df.select(*KEYS).orderBy("lsn").collect()]
    expected = directory_rows(live_server.directory, start, end, "json")
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in expected] and len(rows) == 12


def test_snapshot_start_through_spark(spark: Any, live_server: LiveTarantool, tmp_path: Path) -> None:
    live_server.eval("box.space.t:replace{6001, 'in the snapshot'}")
    state_keys = sorted(r[0] for r in live_server.json("box.space.t:select()"))
    seen: list[tuple[int, list[dict]]] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        seen.append((batch_id, [r.asDict() for r in batch_df.select("file_type", "space_id", "tuple", "extra",
                                                                      "lsn").collect()]))

    _run(spark, live_server, tmp_path / "ckpt", sink, startingPosition="snapshot")
    rows = [r for _, batch in seen for r in batch]
    snap = [r for r in rows if r["file_type"] == "SNAP"]
    assert sorted(json.loads(r["tuple"])[0] for r in snap if r["space_id"] == 512) == state_keys
    read_view = {json.dumps(json.loads(r["extra"])["vclock"]) for r in snap}
    assert len(read_view) == 1  # one read view, named on every snapshot row
    # a second run on the same checkpoint resumes after the snapshot: only the new change, as an XLOG row
    live_server.eval("box.space.t:replace{6002, 'after the snapshot'}")
    seen.clear()
    _run(spark, live_server, tmp_path / "ckpt", sink, startingPosition="snapshot")
    rows = [r for _, batch in seen for r in batch]
    assert [(r["file_type"], json.loads(r["tuple"])) for r in rows] == [("XLOG", [6002, "after the snapshot"])]
