"""Bad servers, bad credentials, stalls, restarts, collected xlogs and keep-alive (real Tarantool 2.6 on loopback)."""

from __future__ import annotations

import json
import logging
import pickle
import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.errors import AuthenticationError, DataLossError, SourceError
from spark_logsource.registry import format_class
from spark_logsource.tarantool.stream.live import make_offset
from tests.support.servers.standin import FakeServer
from tests.support.servers.tarantool_live import NOPERM_PASSWORD, NOPERM_USER, PASSWORD, USER, LiveTarantool
from tests.support.tarantool_live import directory_rows, make_stream, read_range, strip
from tests.support.waiting import until

pytestmark = pytest.mark.server

FORMAT = "tarantool-replication"


def _follow_all(**options: object) -> list:
    return list(spark_logsource.follow(FORMAT, [], stop_when_idle=True, **options))


# --- credentials ----------------------------------------------------------------------------------------------------
def test_wrong_password_is_refused_without_showing_it(live_server: LiveTarantool) -> None:
    secret = "wrong-pw-Zq81"
    with pytest.raises(AuthenticationError) as info:
        _follow_all(**live_server.options(password=secret))
    text = str(info.value)
    assert "Incorrect password" in text and f"127.0.0.1:{live_server.port}" in text
    assert secret not in text and PASSWORD not in text and secret not in repr(info.value)


def test_unknown_user(live_server: LiveTarantool) -> None:
    with pytest.raises(AuthenticationError, match="'nobody' is not found"):
        _follow_all(**live_server.options(uri=f"tarantool://nobody@127.0.0.1:{live_server.port}"))


def test_user_without_replication_role(live_server: LiveTarantool) -> None:
    with pytest.raises(AuthenticationError, match="replication") as info:
        _follow_all(**live_server.options(uri=f"tarantool://{NOPERM_USER}@127.0.0.1:{live_server.port}",
                                          password=NOPERM_PASSWORD))
    assert NOPERM_PASSWORD not in str(info.value)


def test_password_never_in_reprs_rows_logs_or_pickled_slices(live_server: LiveTarantool,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    start = live_server.vclock()
    live_server.eval("box.space.t:replace{77, 'secret test'}")
    uri = f"tarantool://{USER}:{PASSWORD}@127.0.0.1:{live_server.port}"  # password inside the URI this time
    fmt = format_class(FORMAT)({"uri": uri, "startingPosition": "latest"})
    stream = fmt.stream()
    replicaset = live_server.value("box.info.cluster.uuid")
    with caplog.at_level(logging.DEBUG, logger="spark_logsource"):
        slices = stream.plan(make_offset(replicaset, start), make_offset(replicaset, live_server.vclock()))
        table = pa.Table.from_batches([b for s in slices for b in stream.read_slice(s)])
    assert table.num_rows == 1
    for text in (repr(fmt), str(fmt), repr(stream), repr(slices), repr(fmt.password), repr(vars(fmt)),
                 str(table.to_pylist()), caplog.text):
        assert PASSWORD not in text
    assert pickle.dumps(slices[0]).find(PASSWORD.encode()) == -1
    assert table.column("file").to_pylist() == [f"tarantool://127.0.0.1:{live_server.port}"]
    with pytest.raises(AuthenticationError) as info:
        _follow_all(uri=uri.replace(PASSWORD, "bad-" + PASSWORD))
    assert PASSWORD not in str(info.value)


# --- servers that are not Tarantool, or stop answering ------------------------------------------------------------
@pytest.fixture
def fake_server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server = FakeServer(request.param)
    yield server
    server.close()


@pytest.mark.parametrize("fake_server", [b"SSH-2.0-OpenSSH_9.2\r\n" + b"\x00" * 200,
                                         b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4],
                         indirect=True, ids=["ssh", "http"])
def test_a_server_that_is_not_tarantool(fake_server: FakeServer) -> None:
    start = time.monotonic()
    with pytest.raises(SourceError, match="not a Tarantool server") as info:
        _follow_all(uri=f"tarantool://{USER}@127.0.0.1:{fake_server.port}", password=PASSWORD, readTimeout=30)
    assert f"tarantool://127.0.0.1:{fake_server.port}" in str(info.value)
    assert time.monotonic() - start < 30  # refused on the greeting, not after a read timed out


@pytest.mark.parametrize("fake_server", [b""], indirect=True, ids=["silent"])
def test_a_silent_server_fails_within_read_timeout(fake_server: FakeServer) -> None:
    start = time.monotonic()
    with pytest.raises(SourceError, match="readTimeout"):
        _follow_all(uri=f"tarantool://{USER}@127.0.0.1:{fake_server.port}", password=PASSWORD, readTimeout=1)
    assert 0.9 < time.monotonic() - start < 8  # readTimeout, not the 10 s default (slack for a loaded machine)


@pytest.mark.parametrize("fake_server", [(b"Tarantool 2.6.0 (Binary) 3b5fa01f-0000-4000-8000-000000000000"
                                          .ljust(63) + b"\n" + b"c2FsdHNhbHRzYWx0c2FsdHNhbHRzYWx0c2FsdHNhbHQ="
                                          .ljust(63) + b"\n" + b"\xce\x7f\xff\xff\xff")],
                         indirect=True, ids=["absurd-length"])
def test_an_absurd_packet_length_is_refused_before_buffering(fake_server: FakeServer) -> None:
    with pytest.raises(SourceError, match="more than the .*-byte limit"):
        _follow_all(uri=f"tarantool://{USER}@127.0.0.1:{fake_server.port}", password=PASSWORD, readTimeout=2)


def _backlog(server: LiveTarantool, rows: int) -> tuple[dict[int, int], dict[int, int]]:
    start = server.vclock()
    server.eval(f"box.begin() for i = 1, {rows} do box.space.t:replace{{i, string.rep('p', 50)}} "
                "if i % 1000 == 0 then box.commit() box.begin() end end box.commit()")
    return start, server.vclock()


def test_a_stalled_server_fails_within_read_timeout(own_server: LiveTarantool) -> None:
    start, end = _backlog(own_server, 100_000)
    stream = make_stream(own_server, readTimeout=1.5, batchSize=1000)
    replicaset = own_server.value("box.info.cluster.uuid")
    (slice_,) = stream.plan(make_offset(replicaset, start), make_offset(replicaset, end))
    batches = stream.read_slice(slice_)
    next(batches)
    own_server.pause()
    paused = time.monotonic()
    try:
        with pytest.raises(SourceError, match="readTimeout") as info:
            for _ in batches:
                pass
        assert time.monotonic() - paused < 1.5 + 7  # readTimeout, not the 10 s default (slack for a loaded machine)
        assert "vclock {1: " in str(info.value)  # the position reached is named
    finally:
        own_server.resume()


def test_server_killed_and_restarted_mid_read(own_server: LiveTarantool) -> None:
    start, end = _backlog(own_server, 60_000)
    stream = make_stream(own_server, readTimeout=15, batchSize=500, tupleFormat="json", mode="FAILFAST")
    replicaset = own_server.value("box.info.cluster.uuid")
    (slice_,) = stream.plan(make_offset(replicaset, start), make_offset(replicaset, end))
    batches = stream.read_slice(slice_)
    rows = next(batches).to_pylist()
    own_server.stop(kill=True)
    restart_errors: list[BaseException] = []

    def restart() -> None:
        try:
            own_server.start()
        except BaseException as exc:  # reported below: a failed restart is not the reader's fault
            restart_errors.append(exc)

    restarter = threading.Timer(0.5, restart)
    restarter.start()
    try:
        for batch in batches:
            rows += batch.to_pylist()
    finally:
        restarter.join()
        assert not restart_errors, f"the test server did not restart: {restart_errors}"
    expected = directory_rows(own_server.directory, start, end, "json")
    assert len(rows) == len(expected) == 60_000
    assert strip(rows) == strip(expected)


# --- collected xlogs ----------------------------------------------------------------------------------------------
def _collect_xlogs(server: LiveTarantool) -> tuple[dict[int, int], dict[int, int]]:
    start = server.vclock()
    for _ in range(3):
        server.eval("for i = 1, 10 do box.space.t:replace{i, 'gc'} end box.snapshot()")
    server.eval("for i = 1, 10 do box.space.t:replace{i, 'after gc'} end")
    if not until(lambda: int(server.xlog_files()[0].name.split(".")[0]) > sum(start.values())):
        pytest.fail("tarantool kept the old xlogs")  # (its collector runs in the background after a snapshot)
    return start, server.vclock()


def test_collected_xlogs_raise_data_loss_naming_the_range(own_server: LiveTarantool) -> None:
    start, end = _collect_xlogs(own_server)
    with pytest.raises(DataLossError, match=r"between vclock \{1: \d+\} and \{1: \d+\}") as info:
        read_range(own_server, start, end)
    assert f"{{1: {start[1]}}}" in info.value.missing
    assert "failOnDataLoss=false" in str(info.value)


def test_fail_on_data_loss_false_continues_after_the_gap(own_server: LiveTarantool,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    start, end = _collect_xlogs(own_server)
    with caplog.at_level(logging.WARNING):
        table = read_range(own_server, start, end, failOnDataLoss="false", tupleFormat="json", mode="FAILFAST")
    assert "data loss" in caplog.text
    oldest = int(own_server.xlog_files()[0].name.split(".")[0])
    expected = directory_rows(own_server.directory, {1: oldest}, end, "json")
    assert strip(table.to_pylist()) == strip(expected)
    assert table.column("lsn").to_pylist() == list(range(oldest + 1, end[1] + 1))


# --- keep-alive ---------------------------------------------------------------------------------------------------
_SLOW_WRITER = ("require('fiber').create(function() for i = 1, 40 do box.space.t:replace{9000 + i, i} "
                "require('fiber').sleep(0.05) end end)")


def test_ack_timer_keeps_a_session_alive_beyond_4x_replication_timeout(live_server: LiveTarantool) -> None:
    start = live_server.vclock()
    end = {1: start[1] + 40}  # rows that do not exist yet: the read waits for the writer
    began = time.monotonic()
    live_server.eval(_SLOW_WRITER)
    table = read_range(live_server, start, end)
    took = time.monotonic() - began
    assert table.column("lsn").to_pylist() == list(range(start[1] + 1, end[1] + 1))
    assert took > 4 * live_server.replication_timeout * 2  # one session, far beyond the relay's 4x timeout


def test_without_acks_the_server_drops_the_session(live_server: LiveTarantool) -> None:
    start = live_server.vclock()
    end = {1: start[1] + 40}
    live_server.eval(_SLOW_WRITER)
    with pytest.raises(SourceError, match="timed out"):
        read_range(live_server, start, end, ackInterval=60)
    # the next test starts from the server's vclock: the writer must be done with its 40 rows
    assert until(lambda: live_server.vclock()[1] >= end[1]), "the writer finished"


# --- another server behind the same address -----------------------------------------------------------------------
def test_an_offset_of_another_replicaset_is_refused(live_server: LiveTarantool) -> None:
    other = make_offset("11111111-2222-4333-8444-555555555555", {1: 1})
    with pytest.raises(SourceError, match="replicaset UUID changed: the offset belongs to 11111111-"):
        _follow_all(**live_server.options(startingPosition=json.dumps(other)))
    stream = make_stream(live_server)
    (slice_,) = stream.plan(other, make_offset(other["replicaset"], {1: 2}))
    with pytest.raises(SourceError, match="replicaset UUID changed"):
        list(stream.read_slice(slice_))
