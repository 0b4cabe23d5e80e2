"""The live source (``mysql-replication``) against a real MariaDB 10.11: the same rows as the batch reader over the
server's own binlog files, exact resumption, and every failure a clear error naming the server and position."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.errors import AuthenticationError, DataLossError, SourceError
from spark_logsource.mysql.replication_format import LiveSlice, read_live_slice
from spark_logsource.streaming.stream import ReadBudget, offset_json
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.waiting import STATE_TIMEOUT

pytestmark = [pytest.mark.server]


def _opts(server, **more) -> dict:
    return {"uri": server.uri, "password": CDC_PASSWORD, "serverId": "4242", **more}


def _comparable(table: pa.Table) -> list[dict]:
    """Rows with ``file`` reduced to the binlog name (live: mysql://host:port/<name>; files: a path)."""
    rows = table.to_pylist()
    for row in rows:
        row["file"] = row["file"].rsplit("/", 1)[-1]
    return rows


def _files_read(server, end: tuple[str, int] | None = None, **options) -> pa.Table:
    """The batch reader over the server's own files (up to ``end``, else all of them)."""
    if end is None:
        return spark_logsource.read("mysql-binlog", str(server.binlog_dir), **options)
    names = [p.name for p in server.binlog_files()]
    files = [str(server.binlog_dir / n) for n in names[:names.index(end[0]) + 1]]
    return spark_logsource.read("mysql-binlog", files, stopPosition=end[1], **options)


def _master_status(server) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def _ranges(stream, start: dict, seconds: float = 60.0, at_least: int = 0) -> list[tuple[dict, dict, pa.Table]]:
    """Consecutive ranges from ``start`` until caught up or ``seconds`` passed, and at least ``at_least`` ranges
    (within STATE_TIMEOUT: a loaded machine may need more than ``seconds`` for them)."""
    deadline = time.monotonic() + seconds
    hard_deadline = time.monotonic() + STATE_TIMEOUT
    out: list[tuple[dict, dict, pa.Table]] = []
    cur = start
    while time.monotonic() < deadline or (len(out) < at_least and time.monotonic() < hard_deadline):
        end = stream.latest_offset(cur, stream.default_budget())
        if offset_json(end) == offset_json(cur):
            break
        batches = [b for s in stream.plan(cur, end) for b in stream.read_slice(s)]
        out.append((cur, end, pa.Table.from_batches(batches, schema=stream.schema())))
        cur = end
    return out


def test_batch_read_equals_the_servers_files(stream_server) -> None:
    with Writer(stream_server, seed=21) as writer:
        writer.wait_for(60)  # at least two rows each (an order and an item): more than 100 rows
    stream_server.flush_logs()
    # one end for both readers (the server may add a BINLOG_CHECKPOINT to its open file at any time)
    end = _master_status(stream_server)
    ending = json.dumps({"file": end[0], "pos": end[1]})
    live = spark_logsource.read("mysql-replication", [], endingPosition=ending, **_opts(stream_server))
    files = _files_read(stream_server, end)
    assert live.num_rows == files.num_rows > 100
    assert live.column("file")[0].as_py() == f"mysql://127.0.0.1:{stream_server.port}/mysql-bin.000001"
    assert _comparable(live) == _comparable(files)
    live_events = _comparable(spark_logsource.read("mysql-replication", [], view="events", rowFormat="json",
                                                   endingPosition=ending, **_opts(stream_server)))
    file_events = _comparable(_files_read(stream_server, end, view="events", rowFormat="json"))
    assert len(live_events) == len(file_events)
    for a, b in zip(live_events, file_events, strict=True):
        if a["event_type"] == "FORMAT_DESCRIPTION" and a["flags"] != b["flags"]:
            # the server clears the in-use flag of the open file's FDE when it sends it
            assert b["flags"] == a["flags"] | 1
            a["flags"] = b["flags"]
        assert a == b


def test_tables_filter_and_options_work_as_in_batch(stream_server) -> None:
    with Writer(stream_server, seed=22) as writer:
        writer.wait_for(3)
    stream_server.flush_logs()
    live = spark_logsource.read("mysql-replication", [], tables="shop.*", ops="insert,update",
                                includeQuery="false", **_opts(stream_server))
    files = _files_read(stream_server, tables="shop.*", ops="insert,update", includeQuery="false")
    assert live.num_rows == files.num_rows > 0
    assert set(live.column("table").to_pylist()) <= {"orders", "items"}
    assert _comparable(live) == _comparable(files)


def test_stream_under_load_delivers_every_row_once_and_resumes_exactly(stream_server) -> None:
    fmt = make_format("mysql-replication", [], _opts(stream_server, maxFilesPerTrigger="2"))
    stream = fmt.stream()
    start = stream.initial_offset()
    with Writer(stream_server, seed=23) as writer:
        writer.wait_for(11)
        first = _ranges(stream, start, seconds=3, at_least=2)
    assert writer.transactions > 10 and len(first) >= 2
    for _s, end, table in first:
        assert list(end) == ["v", "kind", "server_id", "server_uuid", "file", "pos", "gtid"]
        assert end["kind"] == "mariadb" and end["server_id"] == 1
        assert None not in table.column("xid").to_pylist(), "ranges end at transaction ends"
        if table.num_rows:
            assert end["gtid"] == table.column("gtid")[-1].as_py()
    # a new query from the checkpoint (the last committed offset) reads the rest, nothing twice
    checkpoint = first[-1][1]
    stream_server.flush_logs()
    resumed = make_format("mysql-replication", [], _opts(stream_server, startingPosition=json.dumps(checkpoint),
                                                         serverId="5000")).stream()
    rest = _ranges(resumed, resumed.initial_offset())
    union = pa.concat_tables([t for _s, _e, t in first] + [t for _s, _e, t in rest])
    files = _files_read(stream_server)
    lo = (start["file"], start["pos"])
    in_range = files.filter(pa.compute.greater_equal(files.column("pos"), 0))
    want = [r for r in _comparable(in_range) if (r["file"], r["pos"]) >= lo]
    assert _comparable(union) == want


def test_follow_with_gtid_and_latest_starts(stream_server) -> None:
    with Writer(stream_server, seed=24) as writer:
        writer.wait_for(5)  # several GTIDs: rows after the middle one
    stream_server.flush_logs()
    files = _files_read(stream_server)
    gtids = [g for g in dict.fromkeys(files.column("gtid").to_pylist()) if g]
    pick = gtids[len(gtids) // 2]
    got = [b for b, _o in spark_logsource.follow("mysql-replication", [], stop_when_idle=True,
                                                   **_opts(stream_server, startingPosition=pick))]
    table = pa.Table.from_batches(got)
    seq = int(pick.rsplit("-", 1)[1])
    want = [r for r in _comparable(files) if int(r["gtid"].rsplit("-", 1)[1]) > seq]
    assert _comparable(table) == want and want
    latest = make_format("mysql-replication", [], _opts(stream_server, startingPosition="latest")).stream()
    start = latest.initial_offset()
    assert latest.latest_offset(start, ReadBudget()) == start, "nothing after latest yet"
    stream_server.execute("INSERT INTO other.log (msg) VALUES ('after latest')")
    end = latest.latest_offset(start, ReadBudget())
    rows = [b for s in latest.plan(start, end) for b in latest.read_slice(s)]
    assert [r["after"] for r in pa.Table.from_batches(rows).select(["after"]).to_pylist()]
    assert sum(len(b) for b in rows) == 1


def test_wrong_password_and_missing_grant_are_clear_and_never_show_the_password(stream_server) -> None:
    secret = "not-the-Password-123"
    fmt = make_format("mysql-replication", [], {"uri": stream_server.uri, "password": secret})
    assert secret not in repr(fmt) and secret not in repr(fmt.settings) and secret not in repr(vars(fmt))
    with pytest.raises(AuthenticationError) as info:
        fmt.stream().initial_offset()
    assert f"127.0.0.1:{stream_server.port}" in str(info.value) and "1045" in str(info.value)
    assert secret not in str(info.value)
    noslave = make_format("mysql-replication", [], {"uri": f"mysql://noslave@127.0.0.1:{stream_server.port}",
                                                     "password": "pw"})
    start = {"v": 1, "file": stream_server.binlog_files()[-1].name, "pos": 4}
    with pytest.raises(AuthenticationError) as info:
        list(read_live_slice(noslave.settings, LiveSlice(start["file"], 4, 10_000, 4300), noslave.live_options))
    assert "REPLICATION SLAVE" in str(info.value)
    splits = make_format("mysql-replication", [], _opts(stream_server)).plan([])
    assert CDC_PASSWORD not in repr(splits)


def test_purged_binlog_is_data_loss_unless_allowed(stream_server) -> None:
    with Writer(stream_server, seed=25) as writer:
        writer.wait_for(3)
    stream_server.flush_logs()
    stream = make_format("mysql-replication", [], _opts(stream_server)).stream()
    start = stream.initial_offset()
    oldest = stream_server.purge_all_but_newest(start["file"])
    assert oldest > start["file"]
    with pytest.raises(DataLossError) as info:
        stream.latest_offset(start, ReadBudget())
    assert start["file"] in str(info.value) and oldest in str(info.value)
    assert f"127.0.0.1:{stream_server.port}" in str(info.value)
    # the server's own refusal, when a slice asks for a purged file
    with pytest.raises(DataLossError) as info:
        list(read_live_slice(stream.fmt.settings, LiveSlice(start["file"], 4, 1000, 4301), stream.fmt.live_options))
    assert "1236" in str(info.value)
    lenient = make_format("mysql-replication", [], _opts(stream_server, failOnDataLoss="false")).stream()
    end = lenient.latest_offset(start, ReadBudget())
    slices = lenient.plan(start, end)
    assert slices[0].file == oldest and slices[0].start == 4


def test_start_inside_an_event_is_a_clear_error(stream_server) -> None:
    stream_server.execute("INSERT INTO other.log (msg) VALUES ('x')")
    stream_server.flush_logs()
    name = stream_server.binlog_files()[-2].name
    fmt = make_format("mysql-replication", [], _opts(stream_server))
    with pytest.raises(SourceError) as info:
        list(read_live_slice(fmt.settings, LiveSlice(name, 7, 10_000, 4302), fmt.live_options))
    assert f"{name}:7" in str(info.value) and "1236" in str(info.value)


def test_slow_consumer_survives_net_write_timeout(stream_server) -> None:
    with Writer(stream_server, seed=26) as writer:
        writer.wait_for(60)  # enough to outlast net_write_timeout at the consumer's pace
    stream_server.flush_logs()
    stream_server.execute("SET GLOBAL net_write_timeout = 1")
    try:
        fmt = make_format("mysql-replication", [], _opts(stream_server, batchSize="50"))
        got = []
        for split in fmt.plan([]):
            for batch in fmt.read_split(split):
                got.append(batch)
                time.sleep(0.05)  # a consumer slower than the server's writes
        live = pa.Table.from_batches(got)
    finally:
        stream_server.execute("SET GLOBAL net_write_timeout = 60")
    assert _comparable(live) == _comparable(_files_read(stream_server))


def test_server_restart_starts_a_new_binlog_and_the_stream_goes_on(stream_server) -> None:
    # reconnectTimeout=0: the error while the server is down comes at once (riding through a restart is
    # tests/mysql_stream/test_reconnect.py's subject)
    fmt = make_format("mysql-replication", [], _opts(stream_server, startingPosition="latest", reconnectTimeout="0"))
    stream = fmt.stream()
    start = stream.initial_offset()
    stream_server.execute("INSERT INTO other.log (msg) VALUES ('before restart')")
    stream_server.stop()
    with pytest.raises(SourceError):
        stream.latest_offset(start, ReadBudget())  # the server is down: an error, not a hang
    stream_server.start()
    stream_server.execute("INSERT INTO other.log (msg) VALUES ('after restart')")
    end = stream.latest_offset(start, ReadBudget())
    assert end["file"] > start["file"], "a restarted server writes a new binlog"
    rows = pa.Table.from_batches([b for s in stream.plan(start, end) for b in stream.read_slice(s)])
    msgs = [r["after"] for r in rows.to_pylist()]
    assert len(msgs) == 2 and rows.column("op").to_pylist() == ["insert", "insert"]
