"""``BinlogFile.events(only=...)``: the walk that yields some event types and steps over rows events by their header
(the DDL pass of ``view=table`` on the driver). On every real binlog it must yield exactly what the full walk yields
of those types; a damaged header must still be found, and a damaged body it steps over is left to the readers of
that event (the full walk, in the tasks)."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import pytest

from spark_logsource.framing import BadRange
from spark_logsource.io.window import Window
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog import events
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN

QUERY_ONLY = frozenset({et.QUERY, et.MARIA_QUERY_COMPRESSED})
WITH_MAPS = QUERY_ONLY | {et.TABLE_MAP, et.TRANSACTION_PAYLOAD}
CRC_FILE = Path("mysql-binlog") / "osheroff" / "mysql-bin.checksum-crc32"


def _walk(data: bytes, only: frozenset[int] | None = None) -> list[tuple]:
    with BinlogFile(data, "f") as bf:
        return [("error", e.offset, e.next_offset) if isinstance(e, BadRange) else
                (e.pos, e.next_pos, e.type_code, e.log_pos, bytes(e.body)) for e in bf.events(only=only)]


def _kept(walk: list[tuple], only: frozenset[int]) -> list[tuple]:
    return [e for e in walk if e[0] == "error" or e[2] in only]


def _binlogs(fixtures_dir: Path) -> list[Path]:
    return [p for p in sorted((fixtures_dir / "mysql-binlog").rglob("*")) if p.is_file() and p.suffix != ".json"]


def _bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


@pytest.mark.parametrize("chunk", [None, 37, 4099], ids=["1MiB-reads", "37-byte-reads", "4099-byte-reads"])
@pytest.mark.parametrize("only", [QUERY_ONLY, WITH_MAPS], ids=["queries", "queries-and-maps"])
def test_only_yields_what_the_full_walk_yields_of_those_types(fixtures_dir: Path, only: frozenset[int],
                                                              chunk: int | None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Small read chunks put headers and events across the edge of the walk's buffer."""
    if chunk is not None:
        monkeypatch.setattr(events, "Window", functools.partial(Window, read_chunk=chunk))
    stepped_over = 0
    for path in _binlogs(fixtures_dir):
        whole = _walk(_bytes(path))
        assert not any(e[0] == "error" for e in whole), path
        assert _walk(_bytes(path), only) == _kept(whole, only), path
        stepped_over += len(whole) - len(_kept(whole, only))
    assert stepped_over > 1000  # the files do have events to step over


def test_a_binlog_with_events_at_log_pos_0(fixtures_dir: Path) -> None:
    """A replica's binlog where MariaDB wrote log_pos 0 in its QUERY events: the same events, none lost."""
    data = _bytes(fixtures_dir / "mysql-binlog" / "mariadb-poc" / "domain_id_0_mariadb-repl-bin.000005")
    whole = _walk(data)
    assert sum(1 for e in whole if e[3] == 0) > 100
    for only in (QUERY_ONLY, frozenset({et.XID})):
        assert _walk(data, only) == _kept(whole, only)


def _first(data: bytes, type_codes: set[int]) -> BinlogEvent:
    with BinlogFile(data, "f") as bf:
        return next(e for e in bf.events() if isinstance(e, BinlogEvent) and e.type_code in type_codes)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1:]


def test_a_damaged_body_is_left_to_its_readers_unless_it_is_wanted(fixtures_dir: Path) -> None:
    data = _bytes(fixtures_dir / CRC_FILE)
    rows = _first(data, {et.WRITE_ROWS_V2})
    bad_rows = _flip(data, rows.pos + HEADER_LEN + 3)
    whole = _walk(bad_rows)
    assert ("error", rows.pos, rows.next_pos) in whole  # the full walk (the tasks') reports it
    assert _walk(bad_rows, QUERY_ONLY) == _walk(data, QUERY_ONLY)  # the DDL pass has nothing to say about it

    query = _first(data, QUERY_ONLY)
    bad_query = _flip(data, query.pos + HEADER_LEN + 20)
    filtered = _walk(bad_query, QUERY_ONLY)
    assert filtered[0] == ("error", query.pos, query.next_pos)
    assert filtered[1:] == _walk(data, QUERY_ONLY)[1:]


def _set_type(data: bytes, pos: int, type_code: int) -> bytes:
    return data[:pos + 4] + bytes([type_code]) + data[pos + 5:]


def test_a_ddl_event_whose_type_byte_is_damaged_is_found(fixtures_dir: Path) -> None:
    """A flipped bit, or any rows type, in a QUERY's type byte: a rows type there does not follow a TABLE_MAP, so
    the event is CRC-checked and reported, not stepped over as a rows event."""
    data = _bytes(fixtures_dir / CRC_FILE)
    query = _first(data, QUERY_ONLY)
    damaged = {query.type_code ^ (1 << bit) for bit in range(8)} | set(et.ROWS_TYPES)
    for type_code in sorted(damaged):
        filtered = _walk(_set_type(data, query.pos, type_code), QUERY_ONLY)
        assert filtered[0] == ("error", query.pos, query.next_pos), type_code
    table_map = _first(data, {et.TABLE_MAP})
    for type_code in sorted(set(et.ROWS_TYPES) | {table_map.type_code ^ (1 << bit) for bit in range(8)}):
        filtered = _walk(_set_type(data, table_map.pos, type_code), WITH_MAPS)
        assert ("error", table_map.pos, table_map.next_pos) in filtered, type_code


def test_a_rows_event_without_its_log_pos_is_checked(fixtures_dir: Path) -> None:
    """log_pos 0 (or any other value than the event's end) does not frame an event: it takes the CRC check."""
    data = _bytes(fixtures_dir / CRC_FILE)
    rows = _first(data, {et.WRITE_ROWS_V2})
    for log_pos in (0, rows.next_pos + 1):
        bad = data[:rows.pos + 13] + log_pos.to_bytes(4, "little") + data[rows.pos + 17:]
        assert ("error", rows.pos, rows.next_pos) in _walk(bad, QUERY_ONLY), log_pos


@pytest.mark.parametrize("delta", [1, -1, 4096, 1 << 24])
def test_a_damaged_header_is_found(fixtures_dir: Path, delta: int) -> None:
    """A rows event whose size field is wrong no longer ends at its log_pos: the walk checks it, reports the
    region, and finds the next good event as the full walk does."""
    data = _bytes(fixtures_dir / CRC_FILE)
    rows = _first(data, {et.WRITE_ROWS_V2})
    size_at = rows.pos + 9
    size = int.from_bytes(data[size_at:size_at + 4], "little") + delta
    bad = data[:size_at] + size.to_bytes(4, "little") + data[size_at + 4:]
    whole = _walk(bad)
    errors = [e for e in whole if e[0] == "error"]
    assert errors and errors[0][1] == rows.pos
    assert _walk(bad, QUERY_ONLY) == _kept(whole, QUERY_ONLY)
