"""``BinlogFile.events(only=...)``: the walk that yields some event types and steps over the others by their header
(the DDL pass of ``view=table`` on the driver). On every real binlog it must yield exactly what the full walk yields
of those types; a damaged header must still be found, and a damaged body it steps over is left to the readers of
that event (the full walk, in the tasks)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from spark_logsource.mysql import event_types as et
from spark_logsource.mysql.events import BinlogEvent, BinlogFile, FramingError
from spark_logsource.mysql.header import HEADER_LEN

QUERY_ONLY = frozenset({et.QUERY, et.MARIA_QUERY_COMPRESSED})
WITH_MAPS = QUERY_ONLY | {et.TABLE_MAP, et.TRANSACTION_PAYLOAD}
CRC_FILE = Path("mysql-binlog") / "osheroff" / "mysql-bin.checksum-crc32"


def _walk(data: bytes, only: frozenset[int] | None = None) -> list[tuple]:
    with BinlogFile(data, "f") as bf:
        return [("error", e.pos, e.next_pos) if isinstance(e, FramingError) else
                (e.pos, e.next_pos, e.type_code, e.log_pos, bytes(e.body)) for e in bf.events(only=only)]


def _kept(walk: list[tuple], only: frozenset[int]) -> list[tuple]:
    return [e for e in walk if e[0] == "error" or e[2] in only]


def _binlogs(fixtures_dir: Path) -> list[Path]:
    return [p for p in sorted((fixtures_dir / "mysql-binlog").rglob("*")) if p.is_file() and p.suffix != ".json"]


def _bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


@pytest.mark.parametrize("only", [QUERY_ONLY, WITH_MAPS], ids=["queries", "queries-and-maps"])
def test_only_yields_what_the_full_walk_yields_of_those_types(fixtures_dir: Path, only: frozenset[int]) -> None:
    stepped_over = 0
    for path in _binlogs(fixtures_dir):
        whole = _walk(_bytes(path))
        assert not any(e[0] == "error" for e in whole), path
        assert _walk(_bytes(path), only) == _kept(whole, only), path
        stepped_over += len(whole) - len(_kept(whole, only))
    assert stepped_over > 1000  # the files do have events to step over


def test_events_without_a_log_pos_take_the_checked_path(fixtures_dir: Path) -> None:
    """A replica's binlog where MariaDB wrote log_pos 0: nothing is stepped over blindly, nothing lost."""
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
