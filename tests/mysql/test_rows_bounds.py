"""Bad input to the TABLE_MAP / rows decoders: every truncation of real events (MySQL 5.7 fixture) raises our
CorruptDataError subclasses with the path and an offset inside the event; a missing TABLE_MAP is an error."""

from __future__ import annotations

import pytest

from spark_logsource.errors import CorruptDataError, TruncatedDataError
from spark_logsource.mysql.decode.rows import decode_rows_event, peek_table_id
from spark_logsource.mysql.decode.tablemap import decode_table_map

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
    full = decode_table_map(tm_body, table_id_size=6, path=path, offset=tm_pos)
    for cut in range(len(tm_body)):
        try:
            tm = decode_table_map(tm_body[:cut], table_id_size=6, path=path, offset=tm_pos)
        except CorruptDataError as exc:
            assert exc.path == path and tm_pos <= exc.offset <= tm_pos + 19 + len(tm_body)
        else:  # a cut inside the optional metadata may only lose optional fields
            assert [(c.type, c.meta) for c in tm.columns] == [(c.type, c.meta) for c in full.columns]


def test_every_truncated_rows_event_raises(first_pair):
    path, tm_pos, tm_body, rows_pos, rows_type, rows_body = first_pair
    tm = decode_table_map(tm_body, table_id_size=6, path=path, offset=tm_pos)
    maps = {tm.table_id: tm}
    full = decode_rows_event(rows_type, rows_body, post_header_len=10, table_id_size=6, table_maps=maps,
                             path=path, offset=rows_pos)
    assert full.rows
    for cut in range(len(rows_body)):
        with pytest.raises(TruncatedDataError) as info:
            event = decode_rows_event(rows_type, rows_body[:cut], post_header_len=10, table_id_size=6,
                                      table_maps=maps, path=path, offset=rows_pos)
            # a cut exactly between two rows is a valid, shorter event
            if len(event.rows) < len(full.rows) and event.rows == full.rows[:len(event.rows)]:
                raise TruncatedDataError(path, rows_pos, "cut between rows")
        assert info.value.path == path
        assert rows_pos <= info.value.offset <= rows_pos + 19 + len(rows_body)


def test_missing_table_map_is_an_error(first_pair):
    path, _, _, rows_pos, rows_type, rows_body = first_pair
    table_id = peek_table_id(rows_body, table_id_size=6)
    with pytest.raises(CorruptDataError, match=f"table id {table_id} without TABLE_MAP"):
        decode_rows_event(rows_type, rows_body, post_header_len=10, table_id_size=6, table_maps={},
                          path=path, offset=rows_pos)


def test_garbage_rows_never_hang_or_crash(first_pair):
    path, tm_pos, tm_body, rows_pos, rows_type, rows_body = first_pair
    tm = decode_table_map(tm_body, table_id_size=6, path=path, offset=tm_pos)
    header = len(rows_body) - 1
    for flip in range(14, len(rows_body)):
        for value in (0x00, 0xFF):
            body = bytearray(rows_body)
            body[flip] = value
            try:
                decode_rows_event(rows_type, bytes(body), post_header_len=10, table_id_size=6,
                                  table_maps={tm.table_id: tm}, path=path, offset=rows_pos)
            except CorruptDataError as exc:
                assert exc.path == path and exc.offset >= rows_pos
    assert header > 0
