"""Tarantool's MsgPack extension types (MP_EXT) as Python values.

Used as ``ext_hook`` of :class:`msgpack.Unpacker`; every function takes the ext payload (the bytes after the
ext header) and returns a Python value, or raises :class:`MpExtError` (a ``ValueError``) for a payload that
does not follow the layout, which the caller reports as corrupt data.

Layouts (tarantool/tarantool ``src/lib/core/mp_extension_types.h``, ``mp_decimal.c``, ``mp_uuid.c``,
``mp_datetime.c``, ``mp_interval.c``, ``mp_error.cc``; ``doc/dev_guide/internals/msgpack_extensions``):

- 1 MP_DECIMAL: a msgpack integer ``scale``, then packed BCD: two decimal digits per byte, most significant
  first, the last nibble is the sign (0x0b or 0x0d = negative, 0x0a/0x0c/0x0e/0x0f = positive); a leading
  zero nibble pads an even digit count.  Value = digits × 10^-scale → :class:`decimal.Decimal` with exactly
  that exponent (``1.50`` stays ``1.50``).
- 2 MP_UUID: 16 bytes, RFC 4122 byte order → :class:`uuid.UUID`.
- 3 MP_ERROR: a msgpack map ``{0x00 MP_ERROR_STACK: [error, ...]}``, each error a map ``{0x00 type,
  0x01 file, 0x02 line, 0x03 message, 0x04 errno, 0x05 code, 0x06 fields}`` → ``{"stack": [{"type": ...,
  "file": ..., "line": ..., "message": ..., "errno": ..., "code": ..., "fields": ...}]}`` (unknown keys by
  decimal code).
- 4 MP_DATETIME: int64 seconds since the epoch, little-endian; optionally followed by int32 nanoseconds,
  int16 tzoffset (minutes), int16 tzindex (8 or 16 bytes in all) → an aware UTC :class:`datetime.datetime`
  (the instant; nanoseconds truncated to microseconds; the time zone, informative in Tarantool, is dropped).
  A moment outside Python's years 1–9999 → ``{"epoch": s, "nsec": n, "tzoffset": o, "tzindex": i}``.
- 6 MP_INTERVAL: uint8 field count, then per field a uint8 field id and a msgpack integer → a dict with the
  present fields by name (``year, month, week, day, hour, min, sec, nsec, adjust``); ``adjust`` as text
  (0 ``"excess"``, 1 ``"none"``, 2 ``"last"``, as Lua's ``datetime.interval`` names them).
- any other type (including 5 MP_COMPRESSION, 7 MP_TUPLE, 8 MP_ARROW) → ``{"ext_type": n, "data": bytes}``.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgpack

__all__ = ["MpExtError", "decode_ext", "ext_hook"]

MP_DECIMAL, MP_UUID, MP_ERROR, MP_DATETIME, MP_INTERVAL = 1, 2, 3, 4, 6

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MIN_SECONDS = int((datetime.datetime(1, 1, 1, tzinfo=datetime.UTC) - _EPOCH).total_seconds())
_MAX_SECONDS = int((datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC) - _EPOCH).total_seconds())
_DATETIME_TAIL = struct.Struct("<ihh")
_NEGATIVE_SIGNS = frozenset((0x0B, 0x0D))
_POSITIVE_SIGNS = frozenset((0x0A, 0x0C, 0x0E, 0x0F))

_ERROR_KEYS = {0: "type", 1: "file", 2: "line", 3: "message", 4: "errno", 5: "code", 6: "fields"}
_INTERVAL_FIELDS = {0: "year", 1: "month", 2: "week", 3: "day", 4: "hour", 5: "min", 6: "sec", 7: "nsec", 8: "adjust"}
_ADJUST_NAMES = {0: "excess", 1: "none", 2: "last"}


class MpExtError(ValueError):
    """An MP_EXT payload that does not follow its type's layout."""


def _read_msgpack_int(data: bytes, pos: int) -> tuple[int, int]:
    """One msgpack integer (any width, signed or unsigned) at ``pos`` → (value, position after it)."""
    if pos >= len(data):
        raise MpExtError("truncated integer")
    first = data[pos]
    if first <= 0x7F:
        return first, pos + 1
    if first >= 0xE0:
        return first - 0x100, pos + 1
    formats = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    fmt = formats.get(first)
    if fmt is None:
        raise MpExtError(f"expected a msgpack integer, found byte 0x{first:02x}")
    size = struct.calcsize(fmt)
    if pos + 1 + size > len(data):
        raise MpExtError("truncated integer")
    return struct.unpack_from(fmt, data, pos + 1)[0], pos + 1 + size


def decode_decimal(data: bytes) -> Decimal:
    """MP_DECIMAL payload → Decimal (see the module docstring)."""
    scale, pos = _read_msgpack_int(data, 0)
    bcd = data[pos:]
    if not bcd:
        raise MpExtError("decimal without digits")
    nibbles: list[int] = []
    for byte in bcd:
        nibbles.append(byte >> 4)
        nibbles.append(byte & 0x0F)
    sign_nibble = nibbles.pop()
    if sign_nibble in _NEGATIVE_SIGNS:
        sign = 1
    elif sign_nibble in _POSITIVE_SIGNS:
        sign = 0
    else:
        raise MpExtError(f"bad decimal sign nibble 0x{sign_nibble:x}")
    if any(n > 9 for n in nibbles):
        raise MpExtError("bad decimal digit")
    digits = tuple(nibbles) or (0,)
    return Decimal((sign, digits, -scale))


def decode_uuid(data: bytes) -> uuid.UUID:
    """MP_UUID payload (16 bytes) → UUID."""
    if len(data) != 16:
        raise MpExtError(f"uuid of {len(data)} bytes, expected 16")
    return uuid.UUID(bytes=bytes(data))


def decode_datetime(data: bytes) -> datetime.datetime | dict[str, int]:
    """MP_DATETIME payload (8 or 16 bytes) → aware UTC datetime (see the module docstring)."""
    if len(data) not in (8, 16):
        raise MpExtError(f"datetime of {len(data)} bytes, expected 8 or 16")
    seconds = struct.unpack_from("<q", data, 0)[0]
    nsec, tzoffset, tzindex = _DATETIME_TAIL.unpack_from(data, 8) if len(data) == 16 else (0, 0, 0)
    if not 0 <= nsec < 1_000_000_000:
        raise MpExtError(f"datetime nanoseconds {nsec} out of range")
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
        return {"epoch": seconds, "nsec": nsec, "tzoffset": tzoffset, "tzindex": tzindex}
    return _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nsec // 1000)


def decode_interval(data: bytes) -> dict[str, Any]:
    """MP_INTERVAL payload → dict of the present fields by name."""
    if not data:
        raise MpExtError("empty interval")
    count = data[0]
    pos = 1
    out: dict[str, Any] = {}
    for _ in range(count):
        if pos >= len(data):
            raise MpExtError("truncated interval")
        field = data[pos]
        value, pos = _read_msgpack_int(data, pos + 1)
        name = _INTERVAL_FIELDS.get(field)
        if name is None:
            raise MpExtError(f"unknown interval field {field}")
        if name == "adjust":
            if value not in _ADJUST_NAMES:
                raise MpExtError(f"bad interval adjust {value}")
            out[name] = _ADJUST_NAMES[value]
        else:
            out[name] = value
    if pos != len(data):
        raise MpExtError("trailing bytes after interval")
    return out


def decode_error(data: bytes) -> dict[str, Any]:
    """MP_ERROR payload → ``{"stack": [{"type": ..., "message": ..., ...}, ...]}``."""
    try:
        raw = msgpack.unpackb(
            data, raw=False, strict_map_key=False, ext_hook=ext_hook, unicode_errors="surrogateescape"
        )
    except (ValueError, msgpack.UnpackException) as exc:
        raise MpExtError(f"bad error payload: {exc}") from None
    if not isinstance(raw, dict):
        raise MpExtError("error payload is not a map")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key == 0 and isinstance(value, list):
            stack = []
            for item in value:
                if not isinstance(item, dict):
                    raise MpExtError("error stack entry is not a map")
                stack.append({_ERROR_KEYS.get(k, str(k)) if isinstance(k, int) else str(k): v for k, v in item.items()})
            out["stack"] = stack
        else:
            out[str(key)] = value
    return out


_DECODERS: dict[int, Callable[[bytes], Any]] = {
    MP_DECIMAL: decode_decimal,
    MP_UUID: decode_uuid,
    MP_ERROR: decode_error,
    MP_DATETIME: decode_datetime,
    MP_INTERVAL: decode_interval,
}


def decode_ext(code: int, data: bytes) -> Any:
    """Any MP_EXT payload → its Python value; unknown types → ``{"ext_type": code, "data": data}``."""
    decoder = _DECODERS.get(code)
    if decoder is None:
        return {"ext_type": code, "data": bytes(data)}
    return decoder(data)


def ext_hook(code: int, data: bytes) -> Any:
    """``msgpack.Unpacker(ext_hook=...)`` adapter for :func:`decode_ext`."""
    return decode_ext(code, data)
