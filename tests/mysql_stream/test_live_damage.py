"""A byte damaged between a real MariaDB 10.11 and the live reader: what the server sent for a dump is recorded, one
byte of row data in a rows event is changed, and the client is given those packets. With CRC32 checks the read
fails with an error naming the server, the event's position and the checksum, never the password; without them,
exactly the damaged row differs from the server's own file."""

from __future__ import annotations

import json
import queue
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.errors import SourceError
from spark_logsource.mysql.binlog.event_types import ROWS_TYPES
from spark_logsource.mysql.stream.client import ReplicationClient
from tests.mysql_stream.conftest import CDC_PASSWORD, MAX_BINLOG_SIZE

pytestmark = [pytest.mark.server]

ROWS = 3000


@pytest.fixture(scope="module")
def big_statements(stream_server: Any) -> tuple[str, int, int]:
    """One binlog with an INSERT, an UPDATE and a DELETE of 3000 rows each: about 100 rows events apiece."""
    stream_server.execute("SET GLOBAL max_binlog_size = 1073741824")  # the three statements in one file
    try:
        stream_server.flush_logs()
        name = stream_server.binlog_files()[-1].name
        start = int(stream_server.query("SHOW MASTER STATUS")[0][1])
        stream_server.execute("CREATE TABLE IF NOT EXISTS shop.bulk (id INT PRIMARY KEY, v BIGINT, note TEXT)")
        stream_server.execute("DELETE FROM shop.bulk")
        stream_server.execute(f"INSERT INTO shop.bulk SELECT seq, seq * 7, REPEAT(CHAR(65 + seq % 26), 200) "
                              f"FROM shop.seq_1_to_{ROWS}")
        stream_server.execute("UPDATE shop.bulk SET v = v + 1, note = CONCAT(note, 'u')")
        stream_server.execute("DELETE FROM shop.bulk")
        stop = int(stream_server.query("SHOW MASTER STATUS")[0][1])
        stream_server.flush_logs()
    finally:
        stream_server.execute(f"SET GLOBAL max_binlog_size = {MAX_BINLOG_SIZE}")
    assert stream_server.binlog_files()[-2].name == name
    return name, start, stop


def _live(server: Any, name: str, start: int, stop: int, **more: str) -> pa.Table:
    return spark_logsource.read("mysql-replication", [], uri=server.uri, password=CDC_PASSWORD, serverId="4343",
                                startingPosition=json.dumps({"file": name, "pos": start}),
                                endingPosition=json.dumps({"file": name, "pos": stop}), **more)


def _comparable(table: pa.Table) -> list[dict]:
    rows = table.to_pylist()
    for row in rows:
        row["file"] = row["file"].rsplit("/", 1)[-1]
    return rows


def _rows_events(packets: Iterable[Any]) -> Iterator[tuple[int, bytes]]:
    """``(index, packet)`` of the event packets that hold a rows event."""
    for i, item in enumerate(packets):
        if isinstance(item, bytes) and item[:1] == b"\x00" and len(item) > 20 and item[1 + 4] in ROWS_TYPES:
            yield i, item


def _flip_in_third_rows_event(packets: list[Any]) -> list[Any]:
    """The packets, with one bit of the last row's TEXT changed in the third rows event (the CRC left as sent)."""
    out = list(packets)
    index, packet = list(_rows_events(packets))[2]
    data = bytearray(packet)
    data[len(data) - 40] ^= 0x01
    out[index] = bytes(data)
    return out


def _third_rows_event_position(packets: list[Any]) -> int:
    _index, packet = list(_rows_events(packets))[2]
    return int.from_bytes(packet[1 + 13:1 + 17], "little") - int.from_bytes(packet[1 + 9:1 + 13], "little")


def _replaying(monkeypatch: pytest.MonkeyPatch, damage: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """Record what the server sends for each dump, then hand the client those packets as ``damage`` changed
    them: the server's bytes as a faulty network would deliver them."""
    recorded: list[Any] = []
    real_drain = ReplicationClient._drain_socket

    def drain(self: ReplicationClient, packets: queue.Queue[Any]) -> None:
        recorded.clear()  # each dump replays its own packets

        class Recorder:
            def put(self, item: Any, timeout: float | None = None) -> None:
                # the drain queues a socket read's packets as a list: recorded one packet at a time
                recorded.extend(bytes(p) for p in item) if isinstance(item, list) else recorded.append(item)

        real_drain(self, Recorder())  # the whole dump: it is non-blocking, it ends with the server's EOF
        for item in damage(recorded):
            self._hand_over(packets, item)

    monkeypatch.setattr(ReplicationClient, "_drain_socket", drain)
    return recorded


def test_a_damaged_event_is_an_error_naming_the_server_and_its_position(
        stream_server: Any, big_statements: tuple[str, int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    name, start, stop = big_statements
    recorded = _replaying(monkeypatch, _flip_in_third_rows_event)
    with pytest.raises(SourceError) as info:
        _live(stream_server, name, start, stop)
    message = str(info.value)
    assert message.startswith(f"mysql://127.0.0.1:{stream_server.port} at {name}:"
                              f"{_third_rows_event_position(recorded)}: CRC32 mismatch"), message
    assert CDC_PASSWORD not in message


def test_without_checksums_only_the_damaged_row_differs(stream_server: Any, big_statements: tuple[str, int, int],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    name, start, stop = big_statements
    files = _comparable(spark_logsource.read("mysql-binlog", str(stream_server.binlog_dir / name),
                                             startPosition=str(start), stopPosition=str(stop)))
    assert _comparable(_live(stream_server, name, start, stop, verifyChecksums="false")) == files
    assert len(files) == 3 * ROWS
    recorded = _replaying(monkeypatch, _flip_in_third_rows_event)
    damaged = _comparable(_live(stream_server, name, start, stop, verifyChecksums="false"))
    differ = [(a, b) for a, b in zip(damaged, files, strict=True) if a != b]
    assert len(differ) == 1
    got, want = differ[0]
    assert got["pos"] == want["pos"] == _third_rows_event_position(recorded)
    assert {k for k in got if got[k] != want[k]} == {"after"}, "only the row image carries the damage"
