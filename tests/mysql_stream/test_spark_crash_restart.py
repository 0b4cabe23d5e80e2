"""``spark.readStream`` of a running MariaDB — its binlog directory (``mysql-binlog``) or the server itself over
COM_BINLOG_DUMP (``mysql-replication``) — killed mid-stream and restarted on its checkpoint while a writer keeps
committing, the server rotates its 16 KiB binlogs and old files are purged behind the query: every row of the
server's log arrives exactly once.

The oracle is the server's own files: each is copied aside before it is purged (a byte copy of a closed binlog),
and the batch reader over those copies gives the rows the sink must hold, in binlog order.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.streaming import BatchSink
from tests.support.waiting import QUERY_TIMEOUT, until

pytestmark = [pytest.mark.spark, pytest.mark.server]

COLUMNS = ("file", "pos", "row_index", "database", "table", "op", "gtid", "xid", "before", "after", "query")


def _key(row: tuple) -> tuple:
    return (row[0].rsplit("/", 1)[-1], *row[1:])


def _start(spark: Any, server: Any, source: str, start: str, checkpoint: Path, sink: BatchSink) -> Any:
    """The query over the binlog directory (``mysql-binlog``) or the server itself (``mysql-replication``)."""
    reader = spark.readStream.option("maxFilesPerTrigger", "3").option("rowFormat", "json")
    if source == "directory":
        df = reader.format("mysql-binlog").load(str(server.binlog_dir))
    else:
        df = (reader.format("mysql-replication").option("uri", server.uri).option("password", CDC_PASSWORD)
              .option("serverId", "4600").option("startingPosition", start).load())
    return (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="300 milliseconds").start())


def _archive(server: Any, archive: Path, names: list[str]) -> None:
    """Copy the closed binlogs ``names`` aside (once each): what the server wrote, kept for the oracle."""
    for name in names:
        if not (archive / name).exists():
            shutil.copyfile(server.binlog_dir / name, archive / name)


def _purge_consumed(server: Any, archive: Path, sink: BatchSink) -> list[str]:
    """PURGE the files the query is done with: those older than the file before the newest one it committed rows
    of (a file is read whole before the next one), after copying them aside. Returns the purged names."""
    committed = sorted(_key(r)[0] for rows in list(sink.batches.values())[:-1] for r in rows)
    names = [p.name for p in server.binlog_files()]
    if not committed or committed[-1] not in names:
        return []
    keep_from = names[max(0, names.index(committed[-1]) - 1)]
    doomed = names[:names.index(keep_from)]
    if not doomed:
        return []
    _archive(server, archive, doomed)
    server.execute(f"PURGE BINARY LOGS TO '{keep_from}'")
    return [n for n in doomed if not (server.binlog_dir / n).exists()]


@pytest.mark.parametrize("source", ["directory", "live"])
def test_killed_and_restarted_while_writing_rotating_and_purging(
        spark: Any, stream_server: Any, tmp_path: Path, source: str) -> None:
    from pyspark.errors import StreamingQueryException

    archive = tmp_path / "archive"
    archive.mkdir()
    checkpoint = tmp_path / "checkpoint"
    stream_server.execute(f"PURGE BINARY LOGS TO '{stream_server.binlog_files()[-1].name}'")  # a fresh start
    first_file = stream_server.binlog_files()[0].name
    start = json.dumps({"file": first_file, "pos": 4})
    sink = BatchSink(COLUMNS, fail_in=2)
    purged: list[str] = []
    with Writer(stream_server, seed=41, pause=0.1) as writer:
        query = _start(spark, stream_server, source, start, checkpoint, sink)
        with pytest.raises(StreamingQueryException, match="sink failure in batch 2"):
            query.awaitTermination(QUERY_TIMEOUT)
        writer.wait_for(writer.transactions + 3)  # the writer goes on while the query is down
        query = _start(spark, stream_server, source, start, checkpoint, sink)
        try:
            deadline = time.monotonic() + QUERY_TIMEOUT
            while time.monotonic() < deadline and query.isActive and (
                    len(purged) < 3 or len(sink.batches) < 6 or writer.transactions <= 50):
                purged += _purge_consumed(stream_server, archive, sink)
                time.sleep(0.3)
            writer.stop()
            stream_server.flush_logs()  # the last file is closed: everything written is in closed files
            names = [p.name for p in stream_server.binlog_files()]
            _archive(stream_server, archive, names[:-1])
            files = sorted(archive.iterdir())
            assert files[0].name == first_file and [f.name for f in files] == \
                sorted({*purged, *names[:-1]}), "the archive holds every file of the server's log"
            expected = [_key(tuple(r[c] for c in COLUMNS)) for r in
                        spark_logsource.read("mysql-binlog", [str(f) for f in files], rowFormat="json").to_pylist()]
            until(lambda: len(sink.rows()) >= len(expected), QUERY_TIMEOUT, alive=lambda: query.isActive)
            assert query.exception() is None
        finally:
            query.stop()
    assert writer.transactions > 50 and len(purged) >= 3
    assert sink.attempts[2][0] and sink.attempts[2][0] == sink.attempts[2][1]  # the re-run batch is identical
    assert sorted(sink.batches) == list(range(len(sink.batches)))
    got = [_key(r) for r in sink.rows()]
    assert len(set(got)) == len(got)  # no row twice
    assert got == expected  # every row of the server's log, in binlog order, value for value
