"""``spark.readStream`` of ``mysql-replication`` and ``mysql-binlog`` (a directory) against a real MariaDB: availableNow
into a foreachBatch sink, exactly-once across a crash in the sink and a restart on the same checkpoint, while a
writer keeps committing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.streaming import run_available_now
from tests.support.waiting import until

pytestmark = [pytest.mark.spark, pytest.mark.server]

KEYS = ("file", "pos", "row_index", "database", "table", "op", "gtid", "xid", "before", "after", "query")


def _key(row: dict) -> tuple:
    return tuple(row[k].rsplit("/", 1)[-1] if k == "file" else row[k] for k in KEYS)


class SinkCrash(RuntimeError):
    pass


def _sink(out: Path, crash_at: int | None):
    def sink(batch_df: Any, batch_id: int) -> None:
        rows = [r.asDict() for r in batch_df.select(*KEYS).collect()]
        if batch_id == crash_at:
            raise SinkCrash(f"sink fails on batch {batch_id}")
        (out / f"batch_{batch_id:05d}.json").write_text(json.dumps(rows))  # idempotent per batch id

    return sink


def _run(spark: Any, reader: Any, checkpoint: Path, sink: Any) -> None:
    run_available_now(reader.load(), checkpoint, sink, timeout=300)


def _wait_for_files(server: Any, more: int) -> None:
    """Let the writer rotate the binlog ``more`` times (enough for several micro-batches)."""
    target = len(server.binlog_files()) + more
    assert until(lambda: len(server.binlog_files()) >= target), f"the binlog did not rotate {more} times"


def _sunk(out: Path) -> list[tuple]:
    return [_key(r) for f in sorted(out.glob("batch_*.json")) for r in json.loads(f.read_text())]


def test_live_stream_exactly_once_across_a_sink_crash(spark: Any, stream_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "sink"
    out.mkdir()
    checkpoint = tmp_path / "ckpt"
    stream_server.flush_logs()
    first_file = stream_server.binlog_files()[-1].name
    start = json.dumps({"file": first_file, "pos": 4})

    def reader() -> Any:
        return (spark.readStream.format("mysql-replication")
                .option("uri", stream_server.uri).option("password", CDC_PASSWORD).option("serverId", "4400")
                .option("startingPosition", start).option("maxFilesPerTrigger", "2").option("rowFormat", "json"))

    with Writer(stream_server, seed=31, pause=0.02):
        _wait_for_files(stream_server, 8)
    with pytest.raises(Exception, match="SinkCrash|sink fails"):
        _run(spark, reader(), checkpoint, _sink(out, crash_at=2))
    assert len(list(out.glob("batch_*.json"))) == 2
    with Writer(stream_server, seed=33, pause=0.02) as writer:  # more arrives while the query is down
        writer.wait_for(10)
    stream_server.flush_logs()
    _run(spark, reader(), checkpoint, _sink(out, crash_at=None))  # restart on the same checkpoint
    names = [p.name for p in stream_server.binlog_files()]
    files = spark_logsource.read("mysql-binlog", [str(stream_server.binlog_dir / n)
                                                  for n in names[names.index(first_file):]], rowFormat="json")
    want = [_key(r) for r in files.to_pylist()]
    got = _sunk(out)
    assert len(got) == len(want) > 50
    assert got == want, "every row exactly once, in binlog order, value for value"


def test_directory_stream_available_now(spark: Any, stream_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "sink"
    out.mkdir()
    with Writer(stream_server, seed=32, pause=0.02):
        _wait_for_files(stream_server, 5)  # more than 64k: several micro-batches
    stream_server.flush_logs()
    reader = (spark.readStream.format("mysql-binlog").option("maxBytesPerTrigger", "64k")
              .option("rowFormat", "json").option("path", str(stream_server.binlog_dir)))
    _run(spark, reader, tmp_path / "ckpt", _sink(out, crash_at=None))
    want = [_key(r) for r in spark_logsource.read("mysql-binlog", str(stream_server.binlog_dir),
                                                  rowFormat="json").to_pylist()]
    got = _sunk(out)
    assert got == want and len(got) > 50
    assert len(list(out.glob("batch_*.json"))) > 1


def test_batch_read_of_a_position_range(spark: Any, stream_server: Any) -> None:
    stream_server.flush_logs()
    first = stream_server.binlog_files()[-1].name
    with Writer(stream_server, seed=34, pause=0.02) as writer:
        writer.wait_for(10)
    stream_server.flush_logs()
    end_file, end_pos = stream_server.query("SHOW MASTER STATUS")[0][:2]
    df = (spark.read.format("mysql-replication").option("uri", stream_server.uri).option("password", CDC_PASSWORD)
          .option("serverId", "4500").option("rowFormat", "json")
          .option("startingPosition", json.dumps({"file": first, "pos": 4}))
          .option("endingPosition", json.dumps({"file": end_file, "pos": int(end_pos)})).load())
    assert CDC_PASSWORD not in df._jdf.queryExecution().toString()
    got = [_key(r.asDict()) for r in df.collect()]
    names = [p.name for p in stream_server.binlog_files()]
    files = spark_logsource.read("mysql-binlog", [str(stream_server.binlog_dir / n)
                                                  for n in names[names.index(first):names.index(end_file) + 1]],
                                 rowFormat="json")
    assert sorted(got) == sorted(_key(r) for r in files.to_pylist()) and got
