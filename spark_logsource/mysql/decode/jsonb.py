"""MySQL binary JSON (``JSON`` columns, type 245) decoding, and PARTIAL_UPDATE_ROWS JSON diffs.

Format: mysql-server ``sql-common/json_binary.{h,cc}`` (documented in its header comment):

* a document is ``type u8`` + value; types 0x00/0x01 small/large object, 0x02/0x03 small/large array,
  0x04 literal (0 null, 1 true, 2 false), 0x05 int16, 0x06 uint16, 0x07 int32, 0x08 uint32, 0x09 int64,
  0x0A uint64, 0x0B double, 0x0C string (variable-length length + utf8mb4), 0x0F opaque
  (field type u8, variable-length length, bytes);
* objects / arrays: element count and byte size (2 bytes each when small, 4 when large), then key entries
  (offset, u16 length) for objects, value entries (type u8 + offset, or the value inlined for literals,
  (u)int16 and, when large, (u)int32), keys and values; offsets are relative to the container start;
* variable-length lengths: 7 bits per byte, least significant first, high bit = more (at most 5 bytes).

Opaque values: NEWDECIMAL (precision u8, scale u8, decimal binary) → Decimal; DATE / DATETIME / TIMESTAMP
(8-byte little-endian "packed" datetime, ``TIME_from_longlong_datetime_packed``) → date / datetime;
TIME (``TIME_from_longlong_time_packed``) → str like TIME columns; any other opaque → bytes.
An empty value (length 0) is JSON null, as mysql-server reads it.
"""

from __future__ import annotations

import struct
from datetime import date, datetime
from typing import Any

from spark_logsource.mysql.decode.decimal import decimal_binary_size, decode_decimal_bytes
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int

__all__ = ["JsonDecodeError", "decode_json_diffs", "decode_jsonb"]

MAX_DEPTH = 150

_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY = 0, 1, 2, 3
_LITERAL, _INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64, _DOUBLE, _STRING, _OPAQUE = (
    4, 5, 6, 7, 8, 9, 10, 11, 12, 15)

_S16 = struct.Struct("<h").unpack_from
_U16 = struct.Struct("<H").unpack_from
_S32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_S64 = struct.Struct("<q").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F64 = struct.Struct("<d").unpack_from

_DIFF_OPS = {0: "replace", 1: "insert", 2: "remove"}


class JsonDecodeError(ValueError):
    """The binary JSON is malformed; ``pos`` is the position inside the value."""

    def __init__(self, pos: int, reason: str) -> None:
        super().__init__(f"binary JSON at +{pos}: {reason}")
        self.pos = pos


def _check(buf: bytes | memoryview, pos: int, size: int, what: str) -> None:
    if pos < 0 or pos + size > len(buf):
        raise JsonDecodeError(pos, f"{what} runs past the end of the value")


def _varlen(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(5):
        _check(buf, pos, 1, "length")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos
    raise JsonDecodeError(pos, "variable-length length longer than 5 bytes")


def _packed_datetime(packed: int, field_type: int) -> Any:
    negative = packed < 0
    if negative:
        packed = -packed
    intpart, frac = packed >> 24, packed & 0xFFFFFF
    if field_type == 11:  # TIME
        hour, minute, second = (intpart >> 12) & 0x3FF, (intpart >> 6) & 63, intpart & 63
        text = f"{'-' if negative else ''}{hour:02d}:{minute:02d}:{second:02d}"
        return text + (f".{frac:06d}" if frac else "")
    ymd, hms = intpart >> 17, intpart & 0x1FFFF
    year_month = ymd >> 5
    year, month, day = year_month // 13, year_month % 13, ymd & 31
    try:
        if field_type == 10:  # DATE
            return date(year, month, day)
        return datetime(year, month, day, hms >> 12, (hms >> 6) & 63, hms & 63, frac)
    except ValueError:
        return f"{year:04d}-{month:02d}-{day:02d}"


def _opaque(field_type: int, data: bytes, pos: int) -> Any:
    if field_type == 246 and len(data) >= 2:  # NEWDECIMAL
        precision, scale = data[0], data[1]
        if precision > 0 and scale <= precision and len(data) - 2 == decimal_binary_size(precision, scale):
            try:
                return decode_decimal_bytes(data[2:], precision, scale)
            except ValueError as exc:
                raise JsonDecodeError(pos, str(exc)) from None
        raise JsonDecodeError(pos, "bad opaque DECIMAL")
    if field_type in (7, 10, 11, 12, 17, 18, 19) and len(data) == 8:
        return _packed_datetime(_S64(data, 0)[0], {7: 12, 17: 12, 18: 12, 19: 11}.get(field_type, field_type))
    return bytes(data)


def _scalar(buf: memoryview, type_code: int, pos: int, depth: int) -> Any:
    """Decode a value of ``type_code`` whose data starts at ``pos``."""
    if type_code in (_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY):
        return _container(buf, type_code, pos, depth + 1)
    if type_code == _LITERAL:
        _check(buf, pos, 1, "literal")
        lit = buf[pos]
        if lit == 0:
            return None
        if lit == 1:
            return True
        if lit == 2:
            return False
        raise JsonDecodeError(pos, f"unknown literal {lit}")
    if type_code == _INT16:
        _check(buf, pos, 2, "int16")
        return _S16(buf, pos)[0]
    if type_code == _UINT16:
        _check(buf, pos, 2, "uint16")
        return _U16(buf, pos)[0]
    if type_code == _INT32:
        _check(buf, pos, 4, "int32")
        return _S32(buf, pos)[0]
    if type_code == _UINT32:
        _check(buf, pos, 4, "uint32")
        return _U32(buf, pos)[0]
    if type_code == _INT64:
        _check(buf, pos, 8, "int64")
        return _S64(buf, pos)[0]
    if type_code == _UINT64:
        _check(buf, pos, 8, "uint64")
        return _U64(buf, pos)[0]
    if type_code == _DOUBLE:
        _check(buf, pos, 8, "double")
        return _F64(buf, pos)[0]
    if type_code == _STRING:
        size, start = _varlen(buf, pos)
        _check(buf, start, size, "string")
        return str(buf[start:start + size], "utf-8", "replace")
    if type_code == _OPAQUE:
        _check(buf, pos, 1, "opaque type")
        size, start = _varlen(buf, pos + 1)
        _check(buf, start, size, "opaque value")
        return _opaque(buf[pos], bytes(buf[start:start + size]), pos)
    raise JsonDecodeError(pos, f"unknown value type 0x{type_code:02x}")


def _container(buf: memoryview, type_code: int, start: int, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise JsonDecodeError(start, f"nesting deeper than {MAX_DEPTH}")
    large = type_code in (_LARGE_OBJECT, _LARGE_ARRAY)
    is_object = type_code in (_SMALL_OBJECT, _LARGE_OBJECT)
    width = 4 if large else 2
    unpack = _U32 if large else _U16
    _check(buf, start, 2 * width, "container header")
    count = unpack(buf, start)[0]
    size = unpack(buf, start + width)[0]
    _check(buf, start, size, "container")
    end = start + size
    view = buf[:end]  # every offset below must stay inside this container (a memoryview: no copy)
    key_entry = width + 2
    value_entry = 1 + width
    header = 2 * width + count * ((key_entry if is_object else 0) + value_entry)
    if header > size:
        raise JsonDecodeError(start, f"{count} entries cannot fit in {size} bytes")
    keys: list[str] = []
    pos = start + 2 * width
    if is_object:
        for _ in range(count):
            key_offset = unpack(view, pos)[0]
            key_length = _U16(view, pos + width)[0]
            _check(view, start + key_offset, key_length, "object key")
            keys.append(str(view[start + key_offset:start + key_offset + key_length], "utf-8", "replace"))
            pos += key_entry
    values: list[Any] = []
    for _ in range(count):
        value_type = view[pos]
        if value_type in (_LITERAL, _INT16, _UINT16) or (large and value_type in (_INT32, _UINT32)):
            values.append(_scalar(view, value_type, pos + 1, depth))
        else:
            value_offset = unpack(view, pos + 1)[0]
            if value_offset >= size:
                raise JsonDecodeError(pos, "value offset outside its container")
            values.append(_scalar(view, value_type, start + value_offset, depth))
        pos += value_entry
    if is_object:
        return dict(zip(keys, values, strict=True))
    return values


def decode_jsonb(raw: bytes) -> Any:
    """Decode one binary JSON document (raises JsonDecodeError when malformed)."""
    if not raw:
        return None
    buf = memoryview(raw)  # containers slice it to their extent: O(1) views, not copies of the prefix
    try:
        return _scalar(buf, buf[0], 1, 0)
    except (IndexError, struct.error) as exc:
        raise JsonDecodeError(len(raw), f"value cut short ({exc})") from None


def decode_json_diffs(raw: bytes) -> list[dict[str, Any]]:
    """Decode a PARTIAL_UPDATE_ROWS JSON diff list: a loop of {op u8, path (packed length + text),
    value (packed length + binary JSON, absent for REMOVE)} to the end (``Json_diff_vector`` in
    mysql-server ``sql/json_diff.cc``). Returns ``[{"op", "path", "value"}, ...]``."""
    diffs = []
    pos = 0
    try:
        while pos < len(raw):
            op_code = raw[pos]
            op = _DIFF_OPS.get(op_code)
            if op is None:
                raise JsonDecodeError(pos, f"unknown JSON diff operation {op_code}")
            path_len, pos = read_packed_int(raw, pos + 1)
            _check(raw, pos, path_len, "diff path")
            path = raw[pos:pos + path_len].decode("utf-8", "replace")
            pos += path_len
            value: Any = None
            if op != "remove":
                value_len, pos = read_packed_int(raw, pos)
                _check(raw, pos, value_len, "diff value")
                value = decode_jsonb(raw[pos:pos + value_len])
                pos += value_len
            diffs.append({"op": op, "path": path, "value": value})
    except (IndexError, struct.error) as exc:
        raise JsonDecodeError(pos, f"diff cut short ({exc})") from None
    except BinlogDecodeError as exc:  # a packed length cut short: named as the buffer's own error
        raise JsonDecodeError(pos, f"diff cut short ({exc.at(None, 0)})") from None
    return diffs
