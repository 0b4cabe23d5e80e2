"""Rows events: WRITE/UPDATE/DELETE_ROWS v1 (23–25), v2 (30–32), PARTIAL_UPDATE_ROWS (39) and MariaDB's
compressed rows events (166–168 v1, 169–171 v2).

Layout (mysql-server ``libs/mysql/binlog/event/rows_event.{h,cpp}`` ``Rows_event``, ``sql/rpl_record.cc``
``unpack_row``; MariaDB ``sql/log_event.cc``; ``docs/formats/mysql-binlog.md`` "Rows events"), after the common header:

* post-header: table_id (6 bytes, 4 when table_id_size is 4), flags u16 (1 STMT_END, 2 NO_FOREIGN_KEY_CHECKS,
  4 RELAXED_UNIQUE_CHECKS, 8 COMPLETE_ROWS); v2 only: extra_len u16 (counting itself) + extra-data TLVs;
* column count (packed int), columns-present bitmap ((n + 7) / 8 bytes, LSB first); UPDATE events: a second
  bitmap for the after image;
* row images to the end of the event (MariaDB compressed events: everything after the bitmaps is one
  compressed block, see :func:`~spark_logsource.mysql.binlog.compression.mariadb_uncompress`). Each image: a NULL
  bitmap over the PRESENT columns only, then the values of the present non-NULL columns
  (:mod:`.values`). PARTIAL_UPDATE_ROWS after images start with value_options (packed int; bit 0 =
  PARTIAL_JSON_UPDATES) and, when set, a bitmap with one bit per JSON column of the table; a JSON column
  whose bit is set holds a diff list (:func:`~spark_logsource.mysql.decode.jsonb.decode_json_diffs`): its after
  value is then a list of ``{"op", "path", "value"}`` dicts instead of the document.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import CorruptDataError, TruncatedDataError, UnsupportedDataError
from spark_logsource.mysql.binlog.compression import DEFAULT_MAX_UNCOMPRESSED, mariadb_uncompress
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.jsonb import JsonDecodeError, decode_json_diffs
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int
from spark_logsource.mysql.decode.tablemap import TableMap
from spark_logsource.mysql.decode.values import ValueInvalid, ValueTruncated, column_decoder

__all__ = ["RowsEvent", "parse_rows_event", "peek_table_id", "rows_data", "rows_head"]

#: Where the errors about an event as a whole point: its start, the common header before the body.
_EVENT = -HEADER_LEN

_OPS = {20: "insert", 21: "update", 22: "delete", 23: "insert", 24: "update", 25: "delete",
        30: "insert", 31: "update", 32: "delete", 39: "update",
        166: "insert", 167: "update", 168: "delete", 169: "insert", 170: "update", 171: "delete"}
_V2_TYPES = frozenset({30, 31, 32, 39, 169, 170, 171})
_COMPRESSED_TYPES = frozenset({166, 167, 168, 169, 170, 171})
PARTIAL_UPDATE_ROWS = 39
_PARTIAL_JSON_UPDATES = 1

# v2 extra-data tags (mysql-server ``Rows_event::Extra_row_info``).
_EXTRA_NDB_INFO = 0
_EXTRA_PART_INFO = 1


#: one row of a rows event: (before, after) images, each a dict keyed by :meth:`TableMap.key_for` or None
_Row = tuple[dict[str, Any] | None, dict[str, Any] | None]


@dataclass(slots=True)
class RowsEvent:
    """A decoded rows event: ``rows`` holds (before, after) images; insert → (None, after),
    delete → (before, None). Images are dicts keyed by :meth:`TableMap.key_for`, PRESENT columns only."""

    table_id: int
    flags: int
    op: str
    rows: list[_Row]
    extra: dict[str, Any] | None


def peek_table_id(body: bytes | memoryview, *, table_id_size: int) -> int:
    """The table id of a rows event, without decoding the rest (for skipping unwanted tables); a body too short
    for it is a :class:`BinlogDecodeError` at its first byte."""
    if len(body) < table_id_size:
        raise BinlogDecodeError(0, "rows event shorter than its table id", TruncatedDataError)
    return int.from_bytes(body[:table_id_size], "little")


_Plan = tuple[tuple[tuple[str, Callable[[bytes, int], tuple[Any, int]]], ...], int]


def _plan(table_map: TableMap, present: int) -> _Plan:
    """(key, decoder) pairs of the present columns, and the NULL bitmap size; cached on the TableMap."""
    cache = table_map.row_decoder_cache
    plan: _Plan | None = cache.get(present)
    if plan is None:
        decoders = cache.get("columns")
        if decoders is None:
            try:
                decoders = tuple(column_decoder(col) for col in table_map.columns)
            except ValueError as exc:
                raise BinlogDecodeError(_EVENT, f"table {table_map.database}.{table_map.table}: {exc}",
                                        UnsupportedDataError) from None
            cache["columns"] = decoders
        items = tuple((table_map.key_for(i), decoders[i])
                      for i in range(len(table_map.columns)) if present >> i & 1)
        plan = (items, (len(items) + 7) // 8)
        cache[present] = plan
    return plan


def _read_image(data: bytes, pos: int, plan: _Plan) -> tuple[dict[str, Any], int]:
    items, null_bytes = plan
    end = pos + null_bytes
    if end > len(data):
        raise ValueTruncated(pos, "row NULL bitmap")
    nulls = int.from_bytes(data[pos:end], "little")
    pos = end
    row: dict[str, Any] = {}
    if nulls:
        for key, decode in items:
            if nulls & 1:
                row[key] = None
            else:
                row[key], pos = decode(data, pos)
            nulls >>= 1
    else:
        for key, decode in items:
            row[key], pos = decode(data, pos)
    return row, pos


def _read_partial_image(data: bytes, pos: int, plan: _Plan, table_map: TableMap,
                        present: int) -> tuple[dict[str, Any], int]:
    """A PARTIAL_UPDATE_ROWS after image: value_options, partial-JSON bitmap, then the image (errors at positions
    in ``data``)."""
    value_options, pos = read_packed_int(data, pos)
    if not value_options & _PARTIAL_JSON_UPDATES:
        return _read_image(data, pos, plan)
    json_columns = [c.index for c in table_map.columns if c.real_type == ct.JSON]
    nbytes = (len(json_columns) + 7) // 8
    if pos + nbytes > len(data):
        raise ValueTruncated(pos, "partial JSON bitmap")
    bits = int.from_bytes(data[pos:pos + nbytes], "little")
    pos += nbytes
    partial = {json_columns[k] for k in range(len(json_columns)) if bits >> k & 1}
    if not partial:
        return _read_image(data, pos, plan)
    items, null_bytes = plan
    present_indexes = [i for i in range(len(table_map.columns)) if present >> i & 1]
    end = pos + null_bytes
    if end > len(data):
        raise ValueTruncated(pos, "row NULL bitmap")
    nulls = int.from_bytes(data[pos:end], "little")
    pos = end
    row: dict[str, Any] = {}
    for j, (key, decode) in enumerate(items):
        if nulls >> j & 1:
            row[key] = None
            continue
        index = present_indexes[j]
        if index in partial:
            width = table_map.columns[index].meta
            width = width if isinstance(width, int) and 1 <= width <= 4 else 4
            start = pos + width
            if start > len(data):
                raise ValueTruncated(pos, "partial JSON length")
            stop = start + int.from_bytes(data[pos:start], "little")
            if stop > len(data):
                raise ValueTruncated(pos, "partial JSON")
            try:
                row[key] = decode_json_diffs(data[start:stop])
            except JsonDecodeError as exc:
                raise ValueInvalid(pos, str(exc)) from None
            pos = stop
        else:
            row[key], pos = decode(data, pos)
    return row, pos


def _decode_extra(extra: bytes) -> dict[str, Any]:
    """v2 extra row info TLVs: NDB info (length u8 incl. header, format u8, data) and partition info."""
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(extra):
        tag = extra[pos]
        if tag == _EXTRA_NDB_INFO and pos + 3 <= len(extra):
            length = extra[pos + 1]
            if length < 2 or pos + 1 + length > len(extra):
                break
            out["ndb_format"] = extra[pos + 2]
            out["ndb_data"] = bytes(extra[pos + 3:pos + 1 + length])
            pos += 1 + length
        elif tag == _EXTRA_PART_INFO and pos + 3 <= len(extra):
            out["partition_id"] = int.from_bytes(extra[pos + 1:pos + 3], "little")
            pos += 3
            if pos + 2 <= len(extra) and len(extra) - pos == 2:
                out["source_partition_id"] = int.from_bytes(extra[pos:pos + 2], "little")
                pos += 2
        else:
            break
    if pos < len(extra):
        out["raw"] = bytes(extra[pos:])
    return out


@dataclass(slots=True)
class RowsEventHead:
    """What precedes the row images of a rows event, and where the images start (``buf[pos:]``)."""

    buf: bytes
    table_id: int
    flags: int
    op: str
    table_map: TableMap
    present: int  # columns-present bitmap of the (before) image, padding bits cleared
    present_after: int  # of the after image (UPDATE), else equal to ``present``
    pos: int
    extra: bytes  # v2 extra data (without its length), b"" when none


def rows_head(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
              table_maps: Mapping[int, TableMap]) -> RowsEventHead:
    """Post-header, v2 extra data, column count and column bitmaps of a rows event, checked (errors are
    :class:`BinlogDecodeError` at positions in the body).

    Layout (mysql-server ``libs/mysql/binlog/event/rows_event.h``): table_id (6 or 4 bytes), flags u16, v2 only:
    extra_len u16 (counting itself) + extra data, column count (packed int), columns-present bitmap, for UPDATE a
    second bitmap for the after image; the row images follow.
    """
    op = _OPS.get(event_type)
    if op is None:
        raise BinlogDecodeError(_EVENT, f"event type {event_type} is not a rows event", UnsupportedDataError)
    buf = bytes(body)
    fixed = table_id_size + 2
    if len(buf) < max(fixed, post_header_len):
        raise BinlogDecodeError(0, "rows event shorter than its post-header", TruncatedDataError)
    table_id = int.from_bytes(buf[:table_id_size], "little")
    flags = int.from_bytes(buf[table_id_size:fixed], "little")
    extra = b""
    pos = max(post_header_len, fixed)
    if event_type in _V2_TYPES:
        if len(buf) < fixed + 2:
            raise BinlogDecodeError(fixed, "rows event v2 without extra-data length", TruncatedDataError)
        extra_len = int.from_bytes(buf[fixed:fixed + 2], "little")
        if extra_len < 2 or pos + extra_len - 2 > len(buf):
            raise BinlogDecodeError(fixed, f"rows event extra-data length {extra_len}")
        extra = buf[pos:pos + extra_len - 2]
        pos += extra_len - 2
    table_map = table_maps.get(table_id)
    if table_map is None:
        raise BinlogDecodeError(_EVENT, f"rows event for table id {table_id} without TABLE_MAP")
    ncols, pos = read_packed_int(buf, pos)
    if ncols != len(table_map.columns):
        raise BinlogDecodeError(pos, f"rows event has {ncols} columns, TABLE_MAP of {table_map.database}."
                                     f"{table_map.table} has {len(table_map.columns)}")
    bitmap_len = (ncols + 7) // 8
    if pos + bitmap_len * (2 if op == "update" else 1) > len(buf):
        raise BinlogDecodeError(pos, "rows event ends inside its column bitmaps", TruncatedDataError)
    columns_mask = (1 << ncols) - 1  # bits past the column count are the bitmap's padding
    present = int.from_bytes(buf[pos:pos + bitmap_len], "little") & columns_mask
    pos += bitmap_len
    present_after = present
    if op == "update":
        present_after = int.from_bytes(buf[pos:pos + bitmap_len], "little") & columns_mask
        pos += bitmap_len
    return RowsEventHead(buf, table_id, flags, op, table_map, present, present_after, pos, extra)


def rows_data(event_type: int, head: RowsEventHead, *, max_uncompressed: int) -> tuple[bytes, int, int, bool]:
    """``(data, position of the first image, body position of data[0], inflated block?)`` of a rows event.

    MariaDB's compressed rows events (166–171) zlib-compress everything after the bitmaps; positions inside the
    inflated block have no place in the body, so errors there point at the block's start. A block that does not
    inflate is a :class:`BinlogDecodeError` at a position in the body.
    """
    if event_type in _COMPRESSED_TYPES:
        try:
            data = mariadb_uncompress(head.buf[head.pos:], None, head.pos, max_uncompressed)
        except CorruptDataError as exc:
            raise BinlogDecodeError.of(exc) from None
        return data, 0, head.pos, True
    return head.buf, head.pos, 0, False


def parse_rows_event(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                     table_maps: Mapping[int, TableMap],
                     max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> RowsEvent:
    """Decode a rows event body (after the 19-byte common header, CRC trailer removed).

    Errors are :class:`BinlogDecodeError` at positions in the body (for compressed events, positions inside the
    inflated block are reported at the block's start).
    """
    head = rows_head(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                     table_maps=table_maps)
    op, table_map, present, present_after = head.op, head.table_map, head.present, head.present_after
    extra = _decode_extra(head.extra) if head.extra else None
    in_block = event_type in _COMPRESSED_TYPES
    if in_block:
        try:
            data, pos = mariadb_uncompress(head.buf[head.pos:], None, head.pos, max_uncompressed), 0
        except CorruptDataError as exc:
            raise BinlogDecodeError.of(exc) from None
    else:
        data, pos = head.buf, head.pos
    data_at = head.pos if in_block else 0  # the body position of data[0]

    def where(p: int) -> int:
        return data_at if in_block else p

    plan = _plan(table_map, present)
    plan_after = _plan(table_map, present_after) if op == "update" else plan
    partial = event_type == PARTIAL_UPDATE_ROWS
    rows: list[_Row] = []
    end = len(data)
    row_start = pos
    try:
        while pos < end:
            row_start = pos
            image, pos = _read_image(data, pos, plan)
            if op == "insert" or op == "delete":
                row: _Row = (None, image) if op == "insert" else (image, None)
            elif partial:
                try:
                    after, pos = _read_partial_image(data, pos, plan_after, table_map, present_after)
                except BinlogDecodeError as exc:  # its value_options: at data[0]'s position plus its own
                    raise BinlogDecodeError(data_at + (exc.pos or 0), exc.reason, exc.kind) from None
                row = (image, after)
            else:
                after, pos = _read_image(data, pos, plan_after)
                row = (image, after)
            if pos > end:
                raise ValueTruncated(row_start, "row")
            if pos == row_start:  # images with no column present: the same bytes would be read forever
                raise ValueInvalid(row_start, "row image without columns")
            rows.append(row)
    except ValueTruncated as exc:
        raise BinlogDecodeError(where(exc.pos), f"row {len(rows)} of {table_map.database}.{table_map.table}: {exc} "
                                                "cut short", TruncatedDataError) from None
    except (IndexError, struct.error):
        raise BinlogDecodeError(where(row_start), f"row {len(rows)} of {table_map.database}.{table_map.table} cut "
                                                  "short", TruncatedDataError) from None
    except ValueInvalid as exc:
        raise BinlogDecodeError(where(exc.pos), f"row {len(rows)} of {table_map.database}.{table_map.table}: "
                                                f"{exc}") from None
    except JsonDecodeError as exc:
        raise BinlogDecodeError(where(row_start), f"row {len(rows)} of {table_map.database}.{table_map.table}: "
                                                  f"{exc}") from None
    return RowsEvent(table_id=head.table_id, flags=head.flags, op=op, rows=rows, extra=extra)
