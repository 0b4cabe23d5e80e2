"""Tailing a live server's binlog directory (``readStream`` of ``mysql-binlog``) without Spark: the same ranges Spark
would plan, read range by range (latest_offset, plan, read_slice) while a writer commits and the binlog rotates."""

from __future__ import annotations

import itertools
import json
import shutil
import time

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.errors import DataLossError
from spark_logsource.streaming.stream import ReadBudget, offset_json
from tests.mysql_stream.conftest import Writer
from tests.support.waiting import STATE_TIMEOUT, until

pytestmark = [pytest.mark.server]

FILE_START = 4


def _ranges(directory: str, start: dict | None = None, seconds: float = 60.0, count: int | None = None,
            **options) -> list[tuple[dict, dict, pa.Table]]:
    """Every range [start, end) the stream plans until idle (or for ``seconds``, or ``count`` ranges), with its
    rows."""
    deadline = time.monotonic() + seconds
    if start is not None:
        options["startingPosition"] = json.dumps(start)
    stream = make_format("mysql-binlog", directory, options).stream()
    cur = stream.initial_offset()
    out = []
    while True:
        end = stream.latest_offset(cur, stream.default_budget())
        if offset_json(end) == offset_json(cur) or time.monotonic() > deadline:
            return out
        batches = [b for s in stream.plan(cur, end) for b in stream.read_slice(s)]
        out.append((cur, end, pa.Table.from_batches(batches, schema=stream.schema())))
        if len(out) == count:
            return out
        cur = end


def _settle(server) -> None:
    server.flush_logs()  # the active file is closed, so the batch reader and the stream see the same bytes


def _wait_written(server, writer: Writer, transactions: int, rotations: int = 0) -> None:
    """Until ``writer`` committed ``transactions`` more and the binlog rotated ``rotations`` times more (a
    loaded machine writes slower: the amount is waited for, not a time)."""
    done, files = writer.transactions + transactions, len(server.binlog_files()) + rotations
    assert until(lambda: writer.transactions >= done and len(server.binlog_files()) >= files,
                 alive=lambda: writer.error is None), f"the writer wrote {writer.transactions}: {writer.error}"


def test_tail_under_load_equals_the_batch_read_and_cuts_at_transaction_ends(stream_server) -> None:
    directory = str(stream_server.binlog_dir)
    with Writer(stream_server) as writer:
        _wait_written(stream_server, writer, 21, rotations=4)
        ranges_live = _ranges(directory, seconds=4, maxBytesPerTrigger="3k")
    assert writer.transactions > 20
    _settle(stream_server)
    last = ranges_live[-1][1]
    ranges = ranges_live + _ranges(directory, start=last, maxBytesPerTrigger="3k")
    files = {r[1]["file"] for r in ranges}
    assert len(files) > 3, "the writer rotated the binlog several times while the stream followed it"
    for (_s, end, _t), (start, _e, _u) in itertools.pairwise(ranges):
        assert start == end, "ranges are contiguous"
    for _start, end, table in ranges:
        assert list(end) == ["v", "kind", "server_id", "server_uuid", "file", "pos", "gtid"]
        assert end["kind"] == "mariadb" and end["server_id"] == 1
        xids = table.column("xid").to_pylist()
        assert None not in xids, "every row of a range belongs to a transaction whose XID is in the range"
    streamed = pa.concat_tables([t for _s, _e, t in ranges])
    whole = spark_logsource.read("mysql-binlog", directory)
    assert streamed.num_rows == whole.num_rows > 100
    assert streamed.equals(whole), "the union of the ranges equals the batch read, value for value"
    # the GTID in each offset is the one of the last transaction the range read
    for _start, end, table in ranges:
        if table.num_rows:
            assert end["gtid"] == table.column("gtid")[-1].as_py(), "the offset's GTID state is the last read"


def test_events_view_follows_file_by_file(stream_server) -> None:
    directory = str(stream_server.binlog_dir)
    with Writer(stream_server, seed=11) as writer:
        _wait_written(stream_server, writer, 10, rotations=3)
    _settle(stream_server)
    ranges = _ranges(directory, view="events", maxFilesPerTrigger=1)
    streamed = pa.concat_tables([t for _s, _e, t in ranges])
    # the batch read of the same bytes: the server may still add a BINLOG_CHECKPOINT to its open file meanwhile
    end = ranges[-1][1]
    names = [p.name for p in stream_server.binlog_files()]
    files = [str(stream_server.binlog_dir / n) for n in names[:names.index(end["file"]) + 1]]
    whole = spark_logsource.read("mysql-binlog", files, view="events", stopPosition=end["pos"])
    assert streamed.equals(whole)
    assert len({e["file"] for _s, e, _t in ranges}) > 2
    for start, end, _t in ranges:
        assert start["file"] == end["file"] or end["pos"] == 4 or \
            names.index(end["file"]) == names.index(start["file"]) + 1, "one file per range"


def test_restarted_query_resumes_exactly_once(stream_server) -> None:
    directory = str(stream_server.binlog_dir)
    with Writer(stream_server, seed=3) as writer:
        _wait_written(stream_server, writer, 10, rotations=2)
        first = _ranges(directory, seconds=STATE_TIMEOUT, count=5, maxBytesPerTrigger="2k")
    assert len(first) == 5
    checkpoint = first[-1][1]  # "crash" after five committed batches; restart from the checkpoint
    _settle(stream_server)
    rest = _ranges(directory, start=checkpoint)
    union = pa.concat_tables([t for _s, _e, t in first] + [t for _s, _e, t in rest])
    assert union.equals(spark_logsource.read("mysql-binlog", directory))


def test_partial_tail_is_not_yet(stream_server, tmp_path) -> None:
    """A copy of the directory whose active file ends inside a transaction: the stream stops before it, then
    moves on when the rest is written."""
    with Writer(stream_server, seed=5) as writer:
        _wait_written(stream_server, writer, 5)
    _settle(stream_server)
    files = stream_server.binlog_files()
    source = max(files[:-1], key=lambda p: p.stat().st_size)
    data = source.read_bytes()
    copy = tmp_path / "bin"
    copy.mkdir()
    (copy / "mysql-bin.index").write_text(f"./{source.name}\n")
    cut = len(data) * 2 // 3
    (copy / source.name).write_bytes(data[:cut])
    stream = make_format("mysql-binlog", str(copy), {}).stream()
    start = stream.initial_offset()
    end = stream.latest_offset(start, ReadBudget())
    assert FILE_START < end["pos"] <= cut
    partial = pa.Table.from_batches([b for s in stream.plan(start, end) for b in stream.read_slice(s)],
                                    schema=stream.schema())
    assert stream.latest_offset(end, ReadBudget()) == end, "nothing new is complete"
    with open(copy / source.name, "ab") as f:
        f.write(data[cut:])
    final = stream.latest_offset(end, ReadBudget())
    assert final["pos"] == len(data)
    rest = pa.Table.from_batches([b for s in stream.plan(end, final) for b in stream.read_slice(s)],
                                 schema=stream.schema())
    whole = spark_logsource.read("mysql-binlog", str(copy / source.name))
    assert pa.concat_tables([partial, rest]).equals(whole)
    assert None not in partial.column("xid").to_pylist()



def test_purged_start_is_data_loss_unless_allowed(stream_server, tmp_path) -> None:
    directory = str(stream_server.binlog_dir)
    with Writer(stream_server, seed=9) as writer:
        _wait_written(stream_server, writer, 3)
    stream_server.flush_logs()
    stream = make_format("mysql-binlog", directory, {}).stream()
    start = stream.initial_offset()
    newest = stream_server.binlog_files()[-1].name
    oldest = stream_server.purge_all_but_newest(start["file"])  # PURGE keeps files InnoDB still needs a moment
    assert oldest > start["file"]
    with pytest.raises(DataLossError) as info:
        stream.latest_offset(start, ReadBudget())
    assert f"{start['file']}:4 up to the start of {oldest}" in str(info.value)
    with pytest.raises(DataLossError):
        stream.plan(start, {**start, "file": newest, "pos": 4})
    lenient = make_format("mysql-binlog", directory, {"failOnDataLoss": "false"}).stream()
    end = lenient.latest_offset(start, ReadBudget())
    assert end["file"] >= newest
    slices = lenient.plan(start, end)
    assert slices and slices[0].name == oldest and slices[0].start == FILE_START
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_statement_format_and_missing_names_are_warned_once(stream_server, caplog) -> None:
    import pymysql

    def workload(server) -> None:
        conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION binlog_format = 'STATEMENT'")
                for i in range(5):
                    cur.execute("INSERT INTO other.log (msg) VALUES (%s)", (f"statement {i}",))
                cur.execute("SET SESSION binlog_format = 'ROW'")
                for i in range(5):
                    cur.execute("INSERT INTO other.log (msg) VALUES (%s)", (f"no names {i}",))
        finally:
            conn.close()

    files = stream_server.run_workload(workload, settings={"binlog_row_metadata": "MINIMAL"})
    stream_server.set_global("binlog_row_metadata", "FULL")
    caplog.set_level("WARNING", logger="spark_logsource.mysql.read.transactions")
    changes = spark_logsource.read("mysql-binlog", [str(f) for f in files])
    assert changes.num_rows == 5, "only the ROW-format inserts are changes"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("statement-based" in m for m in messages) == len(files)
    assert sum("no column names" in m and "other.log" in m for m in messages) == 1
    spark_logsource.read("mysql-binlog", [str(f) for f in files])
    assert len(caplog.records) == len(messages), "warned once per process, not per row or per read"
