"""Bad input to the TABLE_MAP / rows decoders: every truncation of real events (MySQL 5.7 fixture) raises the
path-free BinlogDecodeError at a position inside the event, which becomes our CorruptDataError subclass with the
path and the file offset once the reader adds them; a missing TABLE_MAP is an error."""

from __future__ import annotations

import pytest

from spark_logsource.errors import CorruptDataError, TruncatedDataError
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.rows import parse_rows_event, peek_table_id
from spark_logsource.mysql.decode.tablemap import parse_table_map

FIXTURE = "osheroff/mysql-bin.checksum-crc32"


def _events(data: bytes):
    fde_size = int.from_bytes(data[13:17], "little")
    pos = 4 + fde_size
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        yield pos, data[pos + 4], data[pos + 19:pos + size - 4]  # CRC32 file: drop the trailer
        pos += size


@pytest.fixture(scope="module")
def first_pair(fixtures_dir):
    path = fixtures_dir / "mysql-binlog" / FIXTURE
    events = list(_events(path.read_bytes()))
    tm_index = next(i for i, (_, t, _) in enumerate(events) if t == 19)
    tm_pos, _, tm_body = events[tm_index]
    rows_pos, rows_type, rows_body = next(e for e in events[tm_index:] if e[1] in (30, 31, 32))
    return str(path), tm_pos, tm_body, rows_pos, rows_type, rows_body


def test_every_truncated_table_map_raises(first_pair):
    path, tm_pos, tm_body, *_ = first_pair
    full = parse_table_map(tm_body, table_id_size=6)
    for cut in range(len(tm_body)):
        try:
            tm = parse_table_map(tm_body[:cut], table_id_size=6)
        except BinlogDecodeError as exc:
            error = exc.at(path, tm_pos + 19)
            assert isinstance(error, CorruptDataError) and error.reason == exc.reason
            assert error.path == path and tm_pos <= error.offset <= tm_pos + 19 + len(tm_body)
        else:  # a cut inside the optional metadata may only lose optional fields
            assert [(c.type, c.meta) for c in tm.columns] == [(c.type, c.meta) for c in full.columns]


def test_every_truncated_rows_event_raises(first_pair):
    path, _, tm_body, rows_pos, rows_type, rows_body = first_pair
    tm = parse_table_map(tm_body, table_id_size=6)
    maps = {tm.table_id: tm}
    full = parse_rows_event(rows_type, rows_body, post_header_len=10, table_id_size=6, table_maps=maps)
    assert full.rows
    for cut in range(len(rows_body)):
        try:
            event = parse_rows_event(rows_type, rows_body[:cut], post_header_len=10, table_id_size=6,
                                     table_maps=maps)
        except BinlogDecodeError as exc:
            error = exc.at(path, rows_pos + 19)
            assert type(error) is TruncatedDataError, (cut, exc)
            assert error.path == path and rows_pos <= error.offset <= rows_pos + 19 + len(rows_body)
        else:  # a cut exactly between two rows is a valid, shorter event
            assert len(event.rows) < len(full.rows) and event.rows == full.rows[:len(event.rows)], cut


def test_missing_table_map_is_an_error(first_pair):
    path, _, _, rows_pos, rows_type, rows_body = first_pair
    table_id = peek_table_id(rows_body, table_id_size=6)
    with pytest.raises(BinlogDecodeError, match=f"table id {table_id} without TABLE_MAP") as info:
        parse_rows_event(rows_type, rows_body, post_header_len=10, table_id_size=6, table_maps={})
    error = info.value.at(path, rows_pos + 19)
    assert type(error) is CorruptDataError and error.offset == rows_pos  # the event as a whole
    with pytest.raises(BinlogDecodeError, match="shorter than its table id") as info:
        peek_table_id(rows_body[:5], table_id_size=6)
    assert type(info.value.at(path, rows_pos + 19)) is TruncatedDataError and info.value.pos == 0


def test_garbage_rows_never_hang_or_crash(first_pair):
    path, _, tm_body, rows_pos, rows_type, rows_body = first_pair
    tm = parse_table_map(tm_body, table_id_size=6)
    header = len(rows_body) - 1
    for flip in range(14, len(rows_body)):
        for value in (0x00, 0xFF):
            body = bytearray(rows_body)
            body[flip] = value
            try:
                parse_rows_event(rows_type, bytes(body), post_header_len=10, table_id_size=6,
                                 table_maps={tm.table_id: tm})
            except BinlogDecodeError as exc:
                error = exc.at(path, rows_pos + 19)
                assert isinstance(error, CorruptDataError) and error.path == path and error.offset >= rows_pos
    assert header > 0
