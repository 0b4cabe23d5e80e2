"""``startingPosition`` / ``follow --from`` on binlogs: a position that cannot exist is an error naming it (and the
server, live); a binlog that may still appear is awaited with a log line saying what is awaited."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import SourceError
from tests.mysql_stream.conftest import CDC_PASSWORD

pytestmark = [pytest.mark.server]


def _closed_file(server: Any) -> tuple[str, int]:
    """A binlog the server finished (rotated away from), and its size."""
    server.flush_logs()
    name, size = server.query("SHOW BINARY LOGS")[-2][:2]
    return str(name), int(size)


def test_directory_past_the_end_of_a_finished_binlog_is_an_error(stream_server: Any) -> None:
    name, size = _closed_file(stream_server)
    start = {"file": name, "pos": size + 1000}
    with pytest.raises(SourceError, match="past the end of") as info:
        list(spark_logsource.follow("mysql-binlog", str(stream_server.binlog_dir), stop_when_idle=True,
                                    startingPosition=json.dumps(start)))
    assert f"{name}:{size + 1000}" in str(info.value)


def test_directory_binlog_not_written_yet_is_awaited_with_a_log_line(stream_server: Any,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    newest = stream_server.binlog_files()[-1].name
    future = f"{newest.rpartition('.')[0]}.{int(newest.rpartition('.')[2]) + 50:06d}"
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        got = list(spark_logsource.follow("mysql-binlog", str(stream_server.binlog_dir), stop_when_idle=True,
                                          startingPosition=json.dumps({"file": future, "pos": 4})))
    assert got == []
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert waits and f"{future} to appear" in waits[0] and newest in waits[0]


def test_live_past_the_end_of_a_finished_binlog_names_server_and_position(stream_server: Any) -> None:
    name, size = _closed_file(stream_server)
    with pytest.raises(SourceError, match="past the end of") as info:
        list(spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD,
                                    stop_when_idle=True, startingPosition=json.dumps({"file": name, "pos": size + 9})))
    text = str(info.value)
    assert f"mysql://127.0.0.1:{stream_server.port}" in text and f"{name}:{size + 9}" in text


def test_live_binlog_the_server_does_not_have(stream_server: Any) -> None:
    with pytest.raises(SourceError, match="the server has no binlog nosuch-bin.000001") as info:
        list(spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD,
                                    stop_when_idle=True, startingPosition=json.dumps({"file": "nosuch-bin.000001",
                                                                                      "pos": 4})))
    assert f"mysql://127.0.0.1:{stream_server.port}" in str(info.value)


def test_live_position_of_another_server_is_an_error_naming_both(stream_server: Any) -> None:
    """A failover puts another server behind the URI: a binlog file position is one server's own, so the stream
    stops naming both servers instead of reading the new one's events at the old one's offsets."""
    name, _size = _closed_file(stream_server)
    own = int(stream_server.query("SELECT @@server_id")[0][0])
    start = {"kind": "mariadb", "server_id": own + 1000, "file": name, "pos": 4}
    with pytest.raises(SourceError, match="another server answers now") as info:
        list(spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD,
                                    stop_when_idle=True, startingPosition=json.dumps(start)))
    text = str(info.value)
    assert f"server_id {own}, was {own + 1000}" in text and f"mysql://127.0.0.1:{stream_server.port}" in text
