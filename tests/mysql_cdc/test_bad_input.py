"""Bad input for ``view=table`` on ``mysql-replication`` (the live stream and ``startingPosition=snapshot``) against
a real MariaDB 10.11: an account without a privilege it needs, a table that does not exist, binlogs purged while
the stream is behind or while the snapshot's window is still needed. Each gives one of our exception classes
naming the server (and the position, once there is one) and never the password; ``failOnDataLoss=false`` turns a
purge into a warning. Every log record of these tests is checked for the passwords too.

A DDL statement the parser cannot read is covered by ``test_tail.py``
(``test_unreadable_ddl_stops_naming_statement_and_position``: the statement and its position in the message)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.errors import AuthenticationError, DataLossError, LogSourceError, SourceError
from spark_logsource.mysql.position import binlog_number
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from tests.mysql_cdc.conftest import drive
from tests.mysql_stream.conftest import CDC_PASSWORD, CDC_USER, StreamServer
from tests.support.mysql_cdc import TableWriter, create_table, rebuild

#: Accounts missing one privilege each, with passwords of their own (all are looked for in every text).
NO_SELECT = ("nosel", "Nosel-pw_7731")
NO_REPL = ("norepl", "Norepl-pw_5519")
PASSWORDS = (CDC_PASSWORD, NO_SELECT[1], NO_REPL[1])


@pytest.fixture(scope="module")
def server(cdc_server: StreamServer) -> StreamServer:
    for user, password in (NO_SELECT, NO_REPL):
        cdc_server.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        cdc_server.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
    # the binlog side only: no privilege on any table of cdc
    cdc_server.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{NO_SELECT[0]}'@'%'")
    # everything but the dump
    cdc_server.execute(f"GRANT BINLOG MONITOR ON *.* TO '{NO_REPL[0]}'@'%'")
    cdc_server.execute(f"GRANT SELECT ON cdc.* TO '{NO_REPL[0]}'@'%'")
    return cdc_server


@pytest.fixture(autouse=True)
def no_password_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        for password in PASSWORDS:
            assert password not in text, f"a log record shows a password: {record.name}: {text[:300]}"


def _clean(error: BaseException | str) -> str:
    """The error's text (with its causes), checked for the passwords."""
    text = str(error)
    cause = error.__cause__ if isinstance(error, BaseException) else None
    while cause is not None:
        text += f" | {cause}"
        cause = cause.__cause__
    for password in PASSWORDS:
        assert password not in text
    return text


def _uri(server: StreamServer, user: str) -> str:
    return f"mysql://{user}@127.0.0.1:{server.port}"


def _stream(server: StreamServer, table: str, start: str, server_id: str, *, user: tuple[str, str] | None = None,
            **extra: str) -> LogStream:
    user, password = user or (CDC_USER, CDC_PASSWORD)
    opts = {"uri": _uri(server, user), "password": password, "serverId": server_id, "view": "table", "table": table,
            "startingPosition": start, **extra}
    return make_format("mysql-replication", _uri(server, user), opts).stream()


def _newest(server: StreamServer) -> str:
    return json.dumps({"file": server.binlog_files()[-1].name, "pos": 4})


def _checked_offset(offset: Offset) -> Offset:
    text = offset_json(offset)
    for password in PASSWORDS:
        assert password not in text
    return offset


# -- privileges and names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start", ["position", "snapshot"])
def test_user_without_select_on_the_table(server: StreamServer, start: str) -> None:
    create_table(server, "cdc.priv")
    TableWriter(server, "cdc.priv", seed=3).transactions(3)
    with pytest.raises(LogSourceError) as caught:
        stream = _stream(server, "cdc.priv", _newest(server) if start == "position" else "snapshot", "5100",
                         user=NO_SELECT)
        stream.initial_offset()
    message = _clean(caught.value)
    assert isinstance(caught.value, SourceError)
    assert f"127.0.0.1:{server.port}" in message  # the server
    assert "'nosel'" in message and "priv" in message and "1142" in message  # who, which table, the server's code


@pytest.mark.parametrize("start", ["position", "snapshot"])
def test_table_that_does_not_exist_names_what_was_looked_for(server: StreamServer, start: str) -> None:
    with pytest.raises(LogSourceError) as caught:
        stream = _stream(server, "cdc.absent", _newest(server) if start == "position" else "snapshot", "5110")
        stream.initial_offset()
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port}" in message and "cdc.absent" in message
    assert "exist" in message


def test_table_that_does_not_exist_with_schema_from_binlog(server: StreamServer) -> None:
    """No server layout asked for: the binlogs the server still has are what was looked in."""
    with pytest.raises(LogSourceError) as caught:
        _stream(server, "cdc.absent", _newest(server), "5115", schemaFrom="binlog").initial_offset()
    message = _clean(caught.value)
    assert "cdc.absent" in message and "binlogs" in message


def test_user_without_replication_slave_is_told_at_the_slice(server: StreamServer) -> None:
    create_table(server, "cdc.norepl")
    start = _newest(server)
    TableWriter(server, "cdc.norepl", seed=4).transactions(3)
    stream = _stream(server, "cdc.norepl", start, "5120", user=NO_REPL)
    # planning needs BINLOG MONITOR only (SHOW MASTER STATUS, SHOW BINLOG EVENTS): it goes through
    first = _checked_offset(stream.initial_offset())
    end = _checked_offset(stream.latest_offset(first, ReadBudget()))
    slices = stream.plan(first, end)
    assert slices
    with pytest.raises(AuthenticationError) as caught:
        for slice_ in slices:
            list(stream.read_slice(slice_))
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port} at {first['file']}:" in message  # the server and the position
    assert "REPLICATION SLAVE" in message and "'norepl'" in message


def test_user_without_replication_slave_snapshot(server: StreamServer) -> None:
    create_table(server, "cdc.norepl_snap")
    TableWriter(server, "cdc.norepl_snap", seed=6).transactions(5)
    stream = _stream(server, "cdc.norepl_snap", "snapshot", "5130", user=NO_REPL, snapshotChunks="2")
    with pytest.raises(LogSourceError) as caught:
        first = _checked_offset(stream.initial_offset())
        end = _checked_offset(stream.latest_offset(first, ReadBudget()))
        for slice_ in stream.plan(first, end):
            list(stream.read_slice(slice_))
    message = _clean(caught.value)
    assert isinstance(caught.value, SourceError)
    assert f"127.0.0.1:{server.port}" in message and "REPLICATION SLAVE" in message


# -- binlogs purged --------------------------------------------------------------------------------------------
def _behind(server: StreamServer, table: str, server_id: str, **extra: str) -> tuple[LogStream, Offset,
                                                                                       list[dict[str, Any]]]:
    """A stream of ``table`` that read its first changes, then fell behind: the server rotated past its offset's
    binlog and purged it."""
    server.flush_logs()
    start = _newest(server)
    create_table(server, table)
    writer = TableWriter(server, table, seed=21)
    writer.transactions(5)
    stream = _stream(server, table, start, server_id, **extra)
    rows, offset, error = drive(stream, stream.initial_offset())
    assert error is None and rows
    for _ in range(3):
        writer.transactions(3)
        server.flush_logs()
    writer.transactions(3)
    oldest = server.purge_all_but_newest(older_than=offset["file"])
    assert binlog_number(oldest) > binlog_number(offset["file"])
    return stream, _checked_offset(offset), rows


def test_purged_while_behind_is_data_loss(server: StreamServer) -> None:
    stream, offset, _rows = _behind(server, "cdc.purged", "5200")
    with pytest.raises(DataLossError) as caught:
        stream.latest_offset(offset, ReadBudget())
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port}" in message and offset["file"] in message
    assert "failOnDataLoss=false" in message
    # a restarted query on the same checkpoint is told the same
    again = _stream(server, "cdc.purged", json.dumps(offset), "5201")
    with pytest.raises(DataLossError, match=offset["file"]):
        again.latest_offset(again.initial_offset(), ReadBudget())


def test_purged_while_behind_without_fail_on_data_loss_warns_and_goes_on(server: StreamServer,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    stream, offset, rows = _behind(server, "cdc.lossy", "5210", failOnDataLoss="false")
    oldest = server.binlog_files()[0].name
    writer = TableWriter(server, "cdc.lossy", seed=22)
    writer.next_id = int(server.query("SELECT MAX(id) FROM cdc.lossy")[0][0]) + 1
    after_purge = writer.next_id
    writer.transactions(4)
    more, end, error = drive(stream, offset)
    assert error is None and more
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "data loss" in
                r.getMessage()]
    assert warnings and offset["file"] in warnings[0] and oldest in warnings[0]
    # the changes kept are those of the binlogs the server still has: every one after the first run's
    assert min(r["seq"] for r in more) > max(r["seq"] for r in rows)
    assert all(binlog_number(r["source"]["file"].rsplit("/", 1)[-1]) >= binlog_number(oldest) for r in more)
    # every key written after the purge is in the table the stream makes, as the server has it
    table = rebuild(rows + more)
    newest = {r[0]: r[1] for r in server.query(f"SELECT id, name FROM cdc.lossy WHERE id >= {after_purge}")}
    assert newest and all(table[k]["name"] == name for k, name in newest.items())
    assert _checked_offset(end)["file"] == server.binlog_files()[-1].name


def test_purged_between_plan_and_read_is_data_loss(server: StreamServer) -> None:
    server.flush_logs()
    start = _newest(server)
    create_table(server, "cdc.gone")
    writer = TableWriter(server, "cdc.gone", seed=23)
    writer.transactions(5)
    stream = _stream(server, "cdc.gone", start, "5220")
    first = stream.initial_offset()
    end = stream.latest_offset(first, ReadBudget())
    slices = stream.plan(first, end)
    assert slices
    writer.transactions(2)
    server.flush_logs()
    server.purge_all_but_newest(older_than=first["file"])
    with pytest.raises(DataLossError) as caught:
        for slice_ in slices:
            list(stream.read_slice(slice_))
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port}" in message and first["file"] in message


def test_purged_before_the_snapshot_window_is_read_is_data_loss(server: StreamServer) -> None:
    create_table(server, "cdc.snapgone")
    writer = TableWriter(server, "cdc.snapgone", seed=25)
    writer.transactions(20)
    stream = _stream(server, "cdc.snapgone", "snapshot", "5230", snapshotChunks="2")
    first = _checked_offset(stream.initial_offset())
    text = offset_json(first)
    snap_file = next(f.name for f in server.binlog_files() if f.name in text)
    # the changes after T rotate the binlog; the file holding T goes before the chunks are read
    writer.transactions(5)
    server.flush_logs()
    writer.transactions(2)
    server.purge_all_but_newest(older_than=snap_file)
    with pytest.raises(DataLossError) as caught:
        end = stream.latest_offset(first, ReadBudget())
        for slice_ in stream.plan(first, end):
            list(stream.read_slice(slice_))
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port}" in message and snap_file in message, message


# -- Spark ---------------------------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.server
def test_spark_read_stream_errors_name_the_server_not_the_password(spark: Any, server: StreamServer,
                                                                   tmp_path: Any) -> None:
    create_table(server, "cdc.sparkpriv")
    user, password = NO_SELECT
    with pytest.raises(Exception) as caught:
        df = (spark.readStream.format("mysql-replication").option("uri", _uri(server, user))
              .option("password", password).option("serverId", "5300").option("view", "table")
              .option("table", "cdc.sparkpriv").load())
        query = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
    message = _clean(str(caught.value))
    assert f"127.0.0.1:{server.port}" in message and "'nosel'" in message and "1142" in message


def test_follow_gives_the_same_errors(server: StreamServer) -> None:
    user, password = NO_SELECT
    create_table(server, "cdc.followpriv")
    with pytest.raises(SourceError) as caught:
        next(iter(spark_logsource.follow("mysql-replication", _uri(server, user), password=password, view="table",
                                         table="cdc.followpriv", serverId="5310")))
    message = _clean(caught.value)
    assert f"127.0.0.1:{server.port}" in message and "1142" in message
