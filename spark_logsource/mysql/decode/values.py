"""Per-column value decoders for MySQL/MariaDB row images.

Byte layouts: mysql-server ``sql/field.cc`` (``Field_*::pack``), ``mysys/my_time.cc``
(``my_datetime_packed_from_binary``, ``my_time_packed_from_binary``, ``my_timestamp_from_binary``),
``strings/decimal.cc`` (``bin2decimal``); MariaDB ``sql/log_event_client.cc`` (``log_event_print_value``);
summarised in ``docs/formats/mysql-binlog.md`` "Column values".

:func:`column_decoder` builds, once per column, a closure ``decode(buf, pos) -> (value, new_pos)`` with
all type dispatch done up front. ``buf`` must be ``bytes``. A decoder raises :class:`ValueTruncated`
(or ``IndexError`` / ``struct.error``, which callers treat the same way) when the value runs past the end
of ``buf``, and :class:`ValueInvalid` for impossible contents; the rows decoder turns both into our
CorruptDataError subclasses with the file path and offset.

Python value types:

* TINY/SHORT/INT24/LONG/LONGLONG → ``int``; unsigned when SIGNEDNESS metadata says so, otherwise signed
  (what ``mariadb-binlog`` prints first: unsigned 255 in a TINYINT reads back as -1).
* FLOAT → ``float`` (the float32 value widened exactly); DOUBLE → ``float``.
* NEWDECIMAL → ``decimal.Decimal`` with exactly the column's scale.
* DATE → ``datetime.date``; zero / invalid dates (``0000-00-00``, ``2020-02-00``…) → ``str`` ``YYYY-MM-DD``.
* TIME / TIME2 → ``str`` ``[-]HH:MM:SS[.f…]`` with the column's fsp digits (hours may exceed 24).
* DATETIME / DATETIME2 → naive ``datetime.datetime``; zero / invalid → ``str`` ``YYYY-MM-DD hh:mm:ss[.f…]``.
* TIMESTAMP / TIMESTAMP2 → aware ``datetime.datetime`` in UTC; the zero timestamp (epoch 0) → ``str``
  ``0000-00-00 00:00:00[.f…]``.
* YEAR → ``int`` (0 for the zero year, else 1900 + stored byte).
* CHAR/VARCHAR/TEXT → ``str`` decoded with the column's charset when TABLE_MAP metadata gives one that is not
  ``binary`` (63); ``bytes`` for the binary charset (BINARY/VARBINARY/BLOB) and when the bytes do not decode.
  Without charset metadata (MariaDB's default ``binlog_row_metadata=NO_LOG``, MySQL < 8.0.1) text and binary
  columns look the same: values are decoded as UTF-8 when they are valid UTF-8, else kept as ``bytes``.
  CHAR/BINARY values are as stored: trailing pad (spaces / zero bytes) stripped by the server.
* ENUM → ``str`` when the names are known (index 0, the invalid value, → ``""``), else the 1-based ``int``.
* SET → ``str`` ``"a,b"`` when the names are known, else the ``int`` bitmask.
* BIT → ``int``.
* JSON (MySQL) → the binary JSON decoded by :mod:`.jsonb` (dict/list/str/int/float/bool/None, Decimal,
  date/time values); MariaDB JSON is a LONGTEXT → ``str``.
* GEOMETRY → ``bytes`` (SRID u32 LE + WKB as stored); VECTOR → ``bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.decimal import decimal_binary_size, decimal_groups, decode_decimal_bytes
from spark_logsource.mysql.decode.jsonb import decode_jsonb
from spark_logsource.mysql.decode.tablemap import ColumnInfo, string_length_from_meta

__all__ = ["ColumnDecoder", "ValueInvalid", "ValueTruncated", "column_decoder"]

ColumnDecoder = Callable[[bytes, int], tuple[Any, int]]


class ValueTruncated(Exception):
    """A value runs past the end of the row data; ``pos`` is where it started."""

    def __init__(self, pos: int, what: str) -> None:
        super().__init__(what)
        self.pos = pos


class ValueInvalid(Exception):
    """A value's bytes are impossible for its type; ``pos`` is where it started."""

    def __init__(self, pos: int, what: str) -> None:
        super().__init__(what)
        self.pos = pos


_S8 = struct.Struct("<b").unpack_from
_S16 = struct.Struct("<h").unpack_from
_U16 = struct.Struct("<H").unpack_from
_S32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_S64 = struct.Struct("<q").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F32 = struct.Struct("<f").unpack_from
_F64 = struct.Struct("<d").unpack_from
_U32BE = struct.Struct(">I").unpack_from

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _fixed(unpack: Callable[[bytes, int], tuple[Any, ...]], size: int) -> ColumnDecoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size

    return decode


def _tiny_unsigned(buf: bytes, pos: int) -> tuple[int, int]:
    return buf[pos], pos + 1


def _int24(signed: bool) -> ColumnDecoder:
    def decode(buf: bytes, pos: int) -> tuple[int, int]:
        end = pos + 3
        if end > len(buf):
            raise ValueTruncated(pos, "MEDIUMINT")
        return int.from_bytes(buf[pos:end], "little", signed=signed), end

    return decode


def _integer(type_code: int, unsigned: bool) -> ColumnDecoder:
    if type_code == ct.TINY:
        return _tiny_unsigned if unsigned else _fixed(_S8, 1)
    if type_code == ct.SHORT:
        return _fixed(_U16 if unsigned else _S16, 2)
    if type_code == ct.INT24:
        return _int24(not unsigned)
    if type_code == ct.LONG:
        return _fixed(_U32 if unsigned else _S32, 4)
    return _fixed(_U64 if unsigned else _S64, 8)


def _newdecimal(meta: int) -> ColumnDecoder:
    precision, scale = meta >> 8, meta & 0xFF
    if scale > precision or precision == 0:
        raise ValueError(f"bad DECIMAL metadata precision={precision} scale={scale}")
    size = decimal_binary_size(precision, scale)
    groups = decimal_groups(precision, scale)

    def decode(buf: bytes, pos: int) -> tuple[Decimal, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "DECIMAL")
        try:
            return decode_decimal_bytes(buf[pos:end], precision, scale, groups), end
        except ValueError as exc:
            raise ValueInvalid(pos, f"DECIMAL: {exc}") from None

    return decode


def _fraction_text(microsecond: int, fsp: int) -> str:
    return f".{microsecond // 10 ** (6 - fsp):0{fsp}d}" if fsp else ""


def make_date(year: int, month: int, day: int) -> date | str:
    """A date, or the server's text for zero / invalid dates."""
    try:
        return date(year, month, day)
    except ValueError:
        return f"{year:04d}-{month:02d}-{day:02d}"


def make_datetime(year: int, month: int, day: int, hour: int, minute: int, second: int,
                  microsecond: int, fsp: int) -> datetime | str:
    """A naive datetime, or the server's text for zero / invalid datetimes."""
    try:
        return datetime(year, month, day, hour, minute, second, microsecond)
    except ValueError:
        return (f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
                + _fraction_text(microsecond, fsp))


def time_text(negative: bool, hour: int, minute: int, second: int, microsecond: int, fsp: int) -> str:
    """TIME as the server prints it: ``[-]HH:MM:SS[.f…]``."""
    return (f"{'-' if negative else ''}{hour:02d}:{minute:02d}:{second:02d}"
            + _fraction_text(microsecond, fsp))


def _date(buf: bytes, pos: int) -> tuple[date | str, int]:
    end = pos + 3
    if end > len(buf):
        raise ValueTruncated(pos, "DATE")
    v = int.from_bytes(buf[pos:end], "little")
    return make_date(v >> 9, (v >> 5) & 15, v & 31), end


def _year(buf: bytes, pos: int) -> tuple[int, int]:
    v = buf[pos]
    return (1900 + v if v else 0), pos + 1


def _fraction_size(fsp: int) -> int:
    return (fsp + 1) // 2


def _datetime2(fsp: int) -> ColumnDecoder:
    fbytes = _fraction_size(fsp)
    size = 5 + fbytes
    frac_scale = (0, 10000, 100, 1)[fbytes]

    def decode(buf: bytes, pos: int) -> tuple[datetime | str, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "DATETIME2")
        intpart = int.from_bytes(buf[pos:pos + 5], "big") - 0x8000000000
        frac = int.from_bytes(buf[pos + 5:end], "big") * frac_scale if fbytes else 0
        ymd, hms = intpart >> 17, intpart & 0x1FFFF
        year_month = ymd >> 5
        return make_datetime(year_month // 13, year_month % 13, ymd & 31, hms >> 12, (hms >> 6) & 63,
                             hms & 63, frac, fsp), end

    return decode


def _timestamp2(fsp: int) -> ColumnDecoder:
    fbytes = _fraction_size(fsp)
    size = 4 + fbytes
    frac_scale = (0, 10000, 100, 1)[fbytes]
    zero = "0000-00-00 00:00:00" + _fraction_text(0, fsp)

    def decode(buf: bytes, pos: int) -> tuple[datetime | str, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "TIMESTAMP2")
        seconds = _U32BE(buf, pos)[0]
        frac = int.from_bytes(buf[pos + 4:end], "big") * frac_scale if fbytes else 0
        if seconds == 0 and frac == 0:
            return zero, end
        return _EPOCH + timedelta(seconds=seconds, microseconds=frac), end

    return decode


def _time2(fsp: int) -> ColumnDecoder:
    """TIME2: (3 + frac bytes) big-endian, minus 0x800000 << (8 * frac bytes), read as ONE signed number;
    the magnitude splits into hh:mm:ss (10/6/6 bits) and the fraction (``my_time_packed_from_binary``)."""
    fbytes = _fraction_size(fsp)
    size = 3 + fbytes
    bias = 0x800000 << (8 * fbytes)
    frac_bits = 8 * fbytes
    frac_mask = (1 << frac_bits) - 1
    frac_scale = (0, 10000, 100, 1)[fbytes]

    def decode(buf: bytes, pos: int) -> tuple[str, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "TIME2")
        value = int.from_bytes(buf[pos:end], "big") - bias
        negative = value < 0
        if negative:
            value = -value
        hms = value >> frac_bits
        frac = (value & frac_mask) * frac_scale
        return time_text(negative, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63, frac, fsp), end

    return decode


def _timestamp_old(buf: bytes, pos: int) -> tuple[datetime | str, int]:
    seconds = _U32(buf, pos)[0]
    if seconds == 0:
        return "0000-00-00 00:00:00", pos + 4
    return _EPOCH + timedelta(seconds=seconds), pos + 4


def _datetime_old(buf: bytes, pos: int) -> tuple[datetime | str, int]:
    v = _U64(buf, pos)[0]
    d, t = divmod(v, 1_000_000)
    return make_datetime(d // 10000, (d // 100) % 100, d % 100, t // 10000, (t // 100) % 100, t % 100,
                         0, 0), pos + 8


def _time_old(buf: bytes, pos: int) -> tuple[str, int]:
    end = pos + 3
    if end > len(buf):
        raise ValueTruncated(pos, "TIME")
    v = int.from_bytes(buf[pos:end], "little", signed=True)
    negative = v < 0
    v = abs(v)
    return time_text(negative, v // 10000, (v // 100) % 100, v % 100, 0, 0), end


def _text_converter(codec: str | None) -> Callable[[bytes], str | bytes]:
    """bytes → str by ``codec``; ``binary`` keeps bytes; unknown (None) tries UTF-8; undecodable → bytes."""
    if codec == "binary":
        return bytes
    name = codec or "utf-8"

    def convert(raw: bytes) -> str | bytes:
        try:
            return raw.decode(name)
        except UnicodeDecodeError:
            return raw

    return convert


def _length_prefixed(prefix: int, convert: Callable[[bytes], Any], what: str) -> ColumnDecoder:
    if prefix == 1:
        def decode(buf: bytes, pos: int) -> tuple[Any, int]:
            start = pos + 1
            end = start + buf[pos]
            if end > len(buf):
                raise ValueTruncated(pos, what)
            return convert(buf[start:end]), end

        return decode
    if prefix not in (2, 3, 4):
        raise ValueError(f"{what} length prefix of {prefix} bytes")

    def decode_wide(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos + prefix
        if start > len(buf):
            raise ValueTruncated(pos, what)
        end = start + int.from_bytes(buf[pos:start], "little")
        if end > len(buf):
            raise ValueTruncated(pos, what)
        return convert(buf[start:end]), end

    return decode_wide


def _enum(size: int, names: tuple[str, ...] | None) -> ColumnDecoder:
    unpack = _U16 if size == 2 else None

    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        index = unpack(buf, pos)[0] if unpack else buf[pos]
        if names is not None:
            if index == 0:
                return "", pos + size
            if index <= len(names):
                return names[index - 1], pos + size
        return index, pos + size

    return decode


def _set(size: int, names: tuple[str, ...] | None) -> ColumnDecoder:
    limit = 1 << len(names) if names is not None else 0

    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "SET")
        mask = int.from_bytes(buf[pos:end], "little")
        if names is not None and mask < limit:
            return ",".join(name for bit, name in enumerate(names) if mask >> bit & 1), end
        return mask, end

    return decode


def _bit(meta: int) -> ColumnDecoder:
    size = (meta >> 8) + (1 if meta & 0xFF else 0)

    def decode(buf: bytes, pos: int) -> tuple[int, int]:
        end = pos + size
        if end > len(buf):
            raise ValueTruncated(pos, "BIT")
        return int.from_bytes(buf[pos:end], "big"), end

    return decode


def _null(buf: bytes, pos: int) -> tuple[None, int]:
    return None, pos


def _json_value(raw: bytes) -> Any:
    return decode_jsonb(raw)


def column_decoder(col: ColumnInfo) -> ColumnDecoder:
    """Build the decoder closure for one TABLE_MAP column (raises ValueError for unusable metadata)."""
    t = col.real_type
    meta = col.meta if isinstance(col.meta, int) else 0
    if t in (ct.TINY, ct.SHORT, ct.INT24, ct.LONG, ct.LONGLONG):
        return _integer(t, bool(col.unsigned))
    if t == ct.FLOAT:
        return _fixed(_F32, 4)
    if t == ct.DOUBLE:
        return _fixed(_F64, 8)
    if t == ct.NEWDECIMAL:
        return _newdecimal(meta)
    if t in (ct.DATE, ct.NEWDATE):
        return _date
    if t == ct.YEAR:
        return _year
    if t == ct.DATETIME2:
        return _datetime2(min(meta, 6))
    if t == ct.TIMESTAMP2:
        return _timestamp2(min(meta, 6))
    if t == ct.TIME2:
        return _time2(min(meta, 6))
    if t == ct.TIMESTAMP:
        return _timestamp_old
    if t == ct.DATETIME:
        return _datetime_old
    if t == ct.TIME:
        return _time_old
    if t == ct.VARCHAR:
        return _length_prefixed(1 if meta < 256 else 2, _text_converter(ct.codec_for_collation(col.charset)),
                                "VARCHAR")
    if t in (ct.STRING, ct.VAR_STRING):
        max_length = string_length_from_meta(meta)
        return _length_prefixed(1 if max_length < 256 else 2,
                                _text_converter(ct.codec_for_collation(col.charset)), "CHAR")
    if t == ct.ENUM:
        return _enum(2 if (meta & 0xFF) == 2 else 1, col.enum_values)
    if t == ct.SET:
        return _set(max(1, min(meta & 0xFF, 8)), col.set_values)
    if t == ct.BIT:
        return _bit(meta)
    if t in (ct.BLOB, ct.TINY_BLOB, ct.MEDIUM_BLOB, ct.LONG_BLOB):
        return _length_prefixed(meta, _text_converter(ct.codec_for_collation(col.charset)), "BLOB")
    if t == ct.JSON:
        return _length_prefixed(meta, _json_value, "JSON")
    if t in (ct.GEOMETRY, ct.VECTOR):
        return _length_prefixed(meta, bytes, ct.TYPE_NAMES[t])
    if t == ct.NULL:
        return _null
    raise ValueError(f"column type {ct.TYPE_NAMES.get(t, t)} is not supported")
