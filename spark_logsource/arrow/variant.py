"""Spark Variant binary encoding of decoded Python values (the reference implementation).

Format: Apache Spark ``common/variant/README.md`` (same text as Parquet ``VariantEncoding.md``).  A variant
is two byte strings, ``value`` and ``metadata``.

metadata::

    header   1 byte: bits 0-3 version (= 1), bit 4 sorted_strings, bits 6-7 offset_size - 1
    dictionary_size                      offset_size bytes, little-endian
    offsets[dictionary_size + 1]         offset_size bytes each; offsets[0] = 0
    bytes                                the UTF-8 key strings, concatenated

value: one header byte ``basic_type | value_header << 2`` then a body:

- basic_type 0, primitive: value_header is the type id; 0 null, 1 true, 2 false, 3 int8, 4 int16, 5 int32,
  6 int64, 7 double, 8 decimal4, 9 decimal8, 10 decimal16 (1 byte scale, then the unscaled integer in
  4/8/16 bytes), 11 date (int32 days since 1970-01-01), 12 timestamp (int64 microseconds since the epoch, UTC),
  13 timestamp_ntz, 15 binary (u32 length + bytes), 16 long string (u32 length + UTF-8).  All little-endian.
- basic_type 1, short string: value_header is the UTF-8 length (< 64), the bytes follow.
- basic_type 2, object: value_header bits 0-1 field_offset_size - 1, bits 2-3 field_id_size - 1, bit 4
  is_large; then num_elements (4 bytes if is_large else 1), field_ids[num_elements],
  field_offsets[num_elements + 1] (relative to the first value byte; the last one is the values' total size),
  the values.
- basic_type 3, array: value_header bits 0-1 field_offset_size - 1, bit 2 is_large; then num_elements
  (4 bytes if is_large else 1), offsets[num_elements + 1], the values.

Canonical rules (a second implementation must produce byte-identical output for the same Python value):

1. ``None`` → null (``00``).  ``True``/``False`` → ``04`` / ``08``.
2. ``int`` → the smallest of int8/int16/int32/int64 that holds it.  Outside int64: decimal16 with scale 0 when
   ``abs(value) < 10**38``; otherwise a string of its decimal digits (``-`` sign included).
3. ``float`` → double (type 7), always (NaN and infinities included, with the bits Python has).
4. ``decimal.Decimal`` → unscaled integer and scale from ``as_tuple()``: scale = number of fractional digits
   as written (``Decimal('1.50')`` → 150, scale 2); a positive exponent is expanded into the integer with
   scale 0 (``Decimal('1E+3')`` → 1000, scale 0).  precision = max(number of digits of the unscaled integer,
   counting 0 as one digit, scale).  precision ≤ 9 → decimal4, ≤ 18 → decimal8, ≤ 38 → decimal16.  The sign
   of a zero is not kept (``Decimal('-0.0')`` → 0, scale 1).  NaN, infinities and precision > 38 →
   the string ``str(value)``.
5. ``str`` → short string when its UTF-8 is shorter than 64 bytes, else long string (type 16).  A string
   that is not valid Unicode (a lone surrogate) → :class:`VariantEncodeError`.
6. ``bytes``/``bytearray``/``memoryview`` → binary (type 15).  ``uuid.UUID`` → string, canonical lowercase
   8-4-4-4-12 (not the variant uuid type, which Spark 4.x does not read).
7. ``datetime.datetime`` aware (``utcoffset()`` not None) → timestamp (type 12), exact microseconds since
   1970-01-01T00:00:00Z; naive → timestamp_ntz (type 13), microseconds since 1970-01-01T00:00:00.
   ``datetime.date`` → date (type 11).  ``datetime.time`` and ``datetime.timedelta`` → the string
   ``str(value)`` (Spark's variant has no such types).
8. ``dict`` → object.  Keys are converted with :func:`spark_logsource.arrow.jsontext.key_text` (``"a"`` → ``a``,
   ``1`` → ``1``, ``True`` → ``true``, ``False`` → ``false``, ``None`` → ``null``, bytes → base64, a tuple →
   its compact JSON text).  When two keys convert to the same string, the last value wins.  Fields are
   sorted by the UTF-8 bytes of their key (for valid strings that is code-point order, Python's ``<``); the
   values are laid out in that same order.  field_id_size is the smallest of 1/2/3/4 bytes holding the
   largest field id in this object; field_offset_size the smallest holding the total size of its values;
   is_large only when num_elements > 255.
9. ``list``/``tuple`` → array; offset size the smallest of 1/2/3/4 bytes holding the values' total size;
   is_large only when num_elements > 255.
10. metadata: version 1; the dictionary is the set of every (converted) object key anywhere in the value,
    sorted by UTF-8 bytes, field id = index in it; sorted_strings set when the dictionary is non-empty;
    offset_size the smallest of 1/2/3/4 bytes holding both dictionary_size and the total key bytes.  An empty
    dictionary is exactly ``01 00 00``.
11. Subclasses of the types above are encoded as their base type (``bool`` before ``int``, ``datetime``
    before ``date``).  Any other type → :class:`VariantEncodeError` naming the type.  Nesting deeper than
    Python's recursion limit → :class:`VariantEncodeError`.

Note for readers other than Spark's: Spark's own builder orders object fields by Java ``String.compareTo``
(UTF-16 code units), which differs from UTF-8 byte order only between keys holding characters above U+FFFF
and keys holding U+E000–U+FFFF at the same position; we follow the byte order the format spec names.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from itertools import accumulate
from typing import Any

from spark_logsource.arrow.jsontext import JsonEncodeError, int_text, key_text
from spark_logsource.errors import CorruptDataError, LogSourceError, UnsupportedDataError

__all__ = ["EMPTY_METADATA", "VariantEncodeError", "decode_variant", "encode_variant"]


class VariantEncodeError(LogSourceError, TypeError):
    """A Python value that has no Variant encoding (an unknown type, a string with lone surrogates, ...)."""


# ---- type ids and header bytes (Spark common/variant/README.md, "Value encoding") ----
_PRIMITIVE, _SHORT_STR, _OBJECT, _ARRAY = 0, 1, 2, 3
_T_NULL, _T_TRUE, _T_FALSE, _T_INT8, _T_INT16, _T_INT32, _T_INT64, _T_DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
_T_DECIMAL4, _T_DECIMAL8, _T_DECIMAL16, _T_DATE, _T_TIMESTAMP, _T_TIMESTAMP_NTZ = 8, 9, 10, 11, 12, 13
_T_FLOAT, _T_BINARY, _T_LONG_STR = 14, 15, 16

EMPTY_METADATA = b"\x01\x00\x00"
_NULL = b"\x00"
_TRUE = b"\x04"
_FALSE = b"\x08"
_INT8_VALUES = tuple(struct.pack("<Bb", _T_INT8 << 2, v) for v in range(-128, 128))
_SHORT_STR_HEADERS = tuple(bytes(((n << 2) | _SHORT_STR,)) for n in range(64))
_pack_int16 = struct.Struct("<Bh").pack
_pack_int32 = struct.Struct("<Bi").pack
_pack_int64 = struct.Struct("<Bq").pack
_pack_double = struct.Struct("<Bd").pack
_pack_decimal4 = struct.Struct("<BBi").pack
_pack_decimal8 = struct.Struct("<BBq").pack
_pack_date = struct.Struct("<Bi").pack
_pack_u32_header = struct.Struct("<BI").pack
_H_INT16, _H_INT32, _H_INT64 = _T_INT16 << 2, _T_INT32 << 2, _T_INT64 << 2
_H_DOUBLE, _H_DATE = _T_DOUBLE << 2, _T_DATE << 2
_H_DEC4, _H_DEC8, _H_DEC16 = _T_DECIMAL4 << 2, _T_DECIMAL8 << 2, _T_DECIMAL16 << 2
_H_TIMESTAMP, _H_TIMESTAMP_NTZ = _T_TIMESTAMP << 2, _T_TIMESTAMP_NTZ << 2
_H_BINARY, _H_LONG_STR = _T_BINARY << 2, _T_LONG_STR << 2

_U32_LIMIT = 1 << 32
_DECIMAL38_LIMIT = 10**38
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_ONE_MICROSECOND = datetime.timedelta(microseconds=1)


def _size_of(max_value: int) -> int:
    """Smallest of 1/2/3/4 bytes that holds ``max_value`` unsigned."""
    if max_value < 0x100:
        return 1
    if max_value < 0x10000:
        return 2
    if max_value < 0x1000000:
        return 3
    if max_value < _U32_LIMIT:
        return 4
    raise VariantEncodeError(f"variant part of {max_value} bytes does not fit a 32-bit offset")


def _uints(values: list[int], size: int) -> bytes:
    """``values`` as little-endian unsigned integers of ``size`` bytes each."""
    if size == 1:
        return bytes(values)
    if size == 2:
        return struct.pack(f"<{len(values)}H", *values)
    if size == 4:
        return struct.pack(f"<{len(values)}I", *values)
    return b"".join([v.to_bytes(3, "little") for v in values])


# ---- scalars ----


def _int(value: int) -> bytes:
    if -0x80 <= value < 0x80:
        return _INT8_VALUES[value + 128]
    if -0x8000 <= value < 0x8000:
        return _pack_int16(_H_INT16, value)
    if -0x80000000 <= value < 0x80000000:
        return _pack_int32(_H_INT32, value)
    if -0x8000000000000000 <= value < 0x8000000000000000:
        return _pack_int64(_H_INT64, value)
    if -_DECIMAL38_LIMIT < value < _DECIMAL38_LIMIT:
        return bytes((_H_DEC16, 0)) + value.to_bytes(16, "little", signed=True)
    return _string(int_text(value))


def _string(value: str) -> bytes:
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VariantEncodeError(f"string is not valid Unicode ({exc.reason} at index {exc.start})") from exc
    size = len(data)
    if size < 64:
        return _SHORT_STR_HEADERS[size] + data
    if size >= _U32_LIMIT:
        raise VariantEncodeError(f"string of {size} bytes is too long for a variant")
    return _pack_u32_header(_H_LONG_STR, size) + data


def _binary(value: bytes | bytearray | memoryview) -> bytes:
    data = bytes(value)
    if len(data) >= _U32_LIMIT:
        raise VariantEncodeError(f"binary of {len(data)} bytes is too long for a variant")
    return _pack_u32_header(_H_BINARY, len(data)) + data


def _double(value: float) -> bytes:
    return _pack_double(_H_DOUBLE, value)


def _decimal(value: Decimal) -> bytes:
    if not value.is_finite():
        return _string(str(value))
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    if exponent >= 0:
        scale = 0
        precision = 1 if digits == (0,) else len(digits) + exponent
    else:
        scale = -exponent
        precision = max(len(digits), scale)
    if precision > 38:  # checked before building any integer: the exponent may be huge
        return _string(str(value))
    unscaled = int(Decimal((sign, digits, 0)))  # exact: no context rounding in int(Decimal)
    if exponent > 0:
        unscaled *= 10**exponent
    if precision <= 9:
        return _pack_decimal4(_H_DEC4, scale, unscaled)
    if precision <= 18:
        return _pack_decimal8(_H_DEC8, scale, unscaled)
    return bytes((_H_DEC16, scale)) + unscaled.to_bytes(16, "little", signed=True)


def _datetime(value: datetime.datetime) -> bytes:
    if value.tzinfo is not None and value.utcoffset() is not None:
        return _pack_int64(_H_TIMESTAMP, (value - _EPOCH_UTC) // _ONE_MICROSECOND)
    return _pack_int64(_H_TIMESTAMP_NTZ, (value - _EPOCH_NAIVE) // _ONE_MICROSECOND)


def _date(value: datetime.date) -> bytes:
    return _pack_date(_H_DATE, value.toordinal() - _EPOCH_ORDINAL)


def _as_string(value: object) -> bytes:
    return _string(str(value))


_SCALARS: dict[type, Callable[[Any], bytes]] = {
    int: _int,
    str: _string,
    float: _double,
    Decimal: _decimal,
    bytes: _binary,
    bytearray: _binary,
    memoryview: _binary,
    uuid.UUID: _as_string,
    datetime.datetime: _datetime,
    datetime.date: _date,
    datetime.time: _as_string,
    datetime.timedelta: _as_string,
}

# Base classes tried in order for subclasses (bool before int, datetime before date).
_SCALAR_BASES: tuple[tuple[type, Callable[[Any], bytes]], ...] = (
    (bool, lambda value: _TRUE if value else _FALSE),
    (int, lambda value: _int(int(value))),
    (str, lambda value: _string(str.__str__(value))),
    (float, lambda value: _double(float(value))),
    (Decimal, _decimal),
    (bytes, _binary),
    (bytearray, _binary),
    (memoryview, _binary),
    (uuid.UUID, _as_string),
    (datetime.datetime, _datetime),
    (datetime.date, _date),
    (datetime.time, _as_string),
    (datetime.timedelta, _as_string),
)


# ---- containers ----

_CONTAINER_BASES = (dict, list, tuple)
_CONTAINERS = frozenset(_CONTAINER_BASES)
_LEAVES = frozenset([*_SCALARS, type(None), bool])


def _collect_keys(value: Any, keys: set[str]) -> None:
    """Add every converted object key found anywhere in ``value`` to ``keys``."""
    pending = [value]
    pop, push, add = pending.pop, pending.append, keys.add
    while pending:
        node = pop()
        if isinstance(node, dict):
            for key, item in node.items():
                add(key if type(key) is str else key_text(key))
                kind = type(item)
                if kind in _CONTAINERS or (kind not in _LEAVES and isinstance(item, _CONTAINER_BASES)):
                    push(item)
        else:
            for item in node:
                kind = type(item)
                if kind in _CONTAINERS or (kind not in _LEAVES and isinstance(item, _CONTAINER_BASES)):
                    push(item)


def _array(value: list[Any] | tuple[Any, ...], ids: dict[str, int]) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    for item in value:
        append(_encode(item, ids))
    count = len(parts)
    data = b"".join(parts)
    size = len(data)
    if size < 0x100 and count < 0x100:
        return bytes((_ARRAY, count, 0, *accumulate(map(len, parts)))) + data
    offset_size = _size_of(size)
    if count < 0x100:
        head = bytes((((offset_size - 1) << 2) | _ARRAY, count))
    else:
        head = bytes((((0x4 | (offset_size - 1)) << 2) | _ARRAY,)) + count.to_bytes(4, "little")
    return head + _uints([0, *accumulate(map(len, parts))], offset_size) + data


def _object(value: dict[Any, Any], ids: dict[str, int]) -> bytes:
    try:
        keys = sorted(value)
        field_ids = list(map(ids.__getitem__, keys))
    except (KeyError, TypeError):  # some key is not a str: convert, last one wins
        value = {key_text(key): item for key, item in value.items()}
        keys = sorted(value)
        field_ids = list(map(ids.__getitem__, keys))
    parts: list[bytes] = []
    append = parts.append
    for key in keys:
        append(_encode(value[key], ids))
    count = len(parts)
    data = b"".join(parts)
    size = len(data)
    if size < 0x100 and count < 0x100 and len(ids) <= 0x100:  # every field id fits one byte
        return bytes((_OBJECT, count, *field_ids, 0, *accumulate(map(len, parts)))) + data
    offset_size = _size_of(size)
    id_size = _size_of(max(field_ids)) if field_ids else 1
    if count < 0x100:
        head = bytes(((((id_size - 1) << 2 | (offset_size - 1)) << 2) | _OBJECT, count))
    else:
        header = (((0x10 | (id_size - 1) << 2 | (offset_size - 1)) << 2) | _OBJECT,)
        head = bytes(header) + count.to_bytes(4, "little")
    return head + _uints(field_ids, id_size) + _uints([0, *accumulate(map(len, parts))], offset_size) + data


def _encode(value: Any, ids: dict[str, int]) -> bytes:
    kind = type(value)
    if kind is int:
        n: int = value  # (named with its type: the checker does not narrow ``value`` by ``kind``)
        if -0x80 <= n < 0x80:
            return _INT8_VALUES[n + 128]
        return _int(n)
    if kind is str:
        s: str = value
        if len(s) < 64 and s.isascii():
            return _SHORT_STR_HEADERS[len(s)] + s.encode("ascii")
        return _string(s)
    if value is None:
        return _NULL
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if kind is dict:
        return _object(value, ids)
    if kind is list or kind is tuple:
        return _array(value, ids)
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar(value)
    if isinstance(value, dict):
        return _object(value, ids)
    if isinstance(value, (list, tuple)):
        return _array(value, ids)
    for base, scalar in _SCALAR_BASES:
        if isinstance(value, base):
            return scalar(value)
    raise VariantEncodeError(f"cannot encode a value of type {kind.__module__}.{kind.__qualname__} as a variant")


def _metadata(keys: set[str]) -> tuple[bytes, dict[str, int]]:
    """Metadata bytes for the dictionary ``keys`` and the field id of each key."""
    ordered = sorted(keys)
    encoded = [_string_bytes(key) for key in ordered]
    count = len(encoded)
    offsets = [0, *accumulate(map(len, encoded))]
    offset_size = _size_of(max(offsets[-1], count))
    header = 0x01 | 0x10 | ((offset_size - 1) << 6)
    metadata = bytes((header,)) + _uints([count, *offsets], offset_size) + b"".join(encoded)
    return metadata, {key: index for index, key in enumerate(ordered)}


def _string_bytes(value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VariantEncodeError(f"object key is not valid Unicode ({exc.reason} at index {exc.start})") from exc


_METADATA_CACHE: dict[frozenset[str], tuple[bytes, dict[str, int]]] = {}
_METADATA_CACHE_LIMIT = 4096


def encode_variant(value: Any) -> tuple[bytes, bytes]:
    """Encode ``value`` as a Spark variant; returns ``(value_bytes, metadata_bytes)``.

    The encoding is canonical (rules in the module docstring).  Raises :class:`VariantEncodeError` for a value
    with no encoding.
    """
    kind = type(value)
    try:
        if kind in _CONTAINERS or (kind not in _LEAVES and isinstance(value, _CONTAINER_BASES)):
            keys: set[str] = set()
            _collect_keys(value, keys)
            if not keys:
                return _encode(value, {}), EMPTY_METADATA
            frozen = frozenset(keys)
            cached = _METADATA_CACHE.get(frozen)
            if cached is None:
                cached = _metadata(keys)
                if len(_METADATA_CACHE) >= _METADATA_CACHE_LIMIT:
                    _METADATA_CACHE.clear()
                _METADATA_CACHE[frozen] = cached
            metadata, ids = cached
            return _encode(value, ids), metadata
        return _encode(value, {}), EMPTY_METADATA
    except JsonEncodeError as exc:
        raise VariantEncodeError(f"object key: {exc}") from exc
    except RecursionError as exc:
        raise VariantEncodeError("value is nested too deeply to encode as a variant") from exc


# ---- decoding (for tests and debugging) ----


class _Reader:
    """Bounds-checked decoder of one variant; errors name the byte offset in ``value`` (or ``metadata``)."""

    def __init__(self, value: bytes, metadata: bytes) -> None:
        self.value = bytes(value)
        self.keys = self._read_metadata(bytes(metadata))

    @staticmethod
    def _fail(where: str, offset: int, reason: str) -> CorruptDataError:
        return CorruptDataError(f"<variant {where}>", offset, reason)

    def _read_metadata(self, meta: bytes) -> list[str]:
        if not meta:
            raise self._fail("metadata", 0, "empty metadata")
        header = meta[0]
        if header & 0x0F != 1:
            raise UnsupportedDataError("<variant metadata>", 0, f"metadata version {header & 0x0F}")
        size = (header >> 6) + 1
        count = self._uint(meta, 1, size, "metadata")
        if count > len(meta):
            raise self._fail("metadata", 1, f"dictionary size {count} exceeds the metadata length")
        base = 1 + size * (count + 2)
        offsets = [self._uint(meta, 1 + size * (i + 1), size, "metadata") for i in range(count + 1)]
        keys = []
        for i in range(count):
            start, end = base + offsets[i], base + offsets[i + 1]
            if not offsets[i] <= offsets[i + 1] or end > len(meta):
                raise self._fail("metadata", 1 + size * (i + 1), "dictionary offset out of range")
            try:
                keys.append(meta[start:end].decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise self._fail("metadata", start, "dictionary string is not UTF-8") from exc
        return keys

    def _uint(self, data: bytes, pos: int, size: int, where: str = "value") -> int:
        if pos < 0 or pos + size > len(data):
            raise self._fail(where, pos, f"needs {size} bytes, data ends at {len(data)}")
        return int.from_bytes(data[pos : pos + size], "little")

    def _slice(self, pos: int, size: int) -> bytes:
        if pos + size > len(self.value):
            raise self._fail("value", pos, f"needs {size} bytes, data ends at {len(self.value)}")
        return self.value[pos : pos + size]

    def read(self, pos: int, depth: int = 0) -> Any:
        if depth > 500:
            raise self._fail("value", pos, "nesting deeper than 500")
        header = self._uint(self.value, pos, 1)
        basic, info = header & 0x3, header >> 2
        if basic == _SHORT_STR:
            return self._text(pos + 1, info)
        if basic == _OBJECT:
            return self._container(pos, info, depth, is_object=True)
        if basic == _ARRAY:
            return self._container(pos, info, depth, is_object=False)
        return self._primitive(pos, info)

    def _text(self, pos: int, size: int) -> str:
        try:
            return self._slice(pos, size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail("value", pos, "string is not UTF-8") from exc

    def _signed(self, pos: int, size: int) -> int:
        return int.from_bytes(self._slice(pos, size), "little", signed=True)

    def _primitive(self, pos: int, type_id: int) -> Any:
        body = pos + 1
        if type_id == _T_NULL:
            return None
        if type_id in (_T_TRUE, _T_FALSE):
            return type_id == _T_TRUE
        if _T_INT8 <= type_id <= _T_INT64:
            return self._signed(body, 1 << (type_id - _T_INT8))
        if type_id == _T_DOUBLE:
            return struct.unpack("<d", self._slice(body, 8))[0]
        if type_id == _T_FLOAT:
            return struct.unpack("<f", self._slice(body, 4))[0]
        if type_id in (_T_DECIMAL4, _T_DECIMAL8, _T_DECIMAL16):
            scale = self._uint(self.value, body, 1)
            unscaled = self._signed(body + 1, {_T_DECIMAL4: 4, _T_DECIMAL8: 8, _T_DECIMAL16: 16}[type_id])
            return Decimal(f"{unscaled}E-{scale}")  # exact; scaleb() would round to the context
        if type_id == _T_DATE:
            days = self._signed(body, 4)
            try:
                return datetime.date.fromordinal(days + _EPOCH_ORDINAL)
            except (ValueError, OverflowError) as exc:
                raise UnsupportedDataError("<variant value>", pos, f"date {days} is outside Python's") from exc
        if type_id in (_T_TIMESTAMP, _T_TIMESTAMP_NTZ):
            micros = self._signed(body, 8)
            try:
                delta = datetime.timedelta(microseconds=micros)
                return _EPOCH_UTC + delta if type_id == _T_TIMESTAMP else _EPOCH_NAIVE + delta
            except OverflowError as exc:
                raise UnsupportedDataError("<variant value>", pos, f"timestamp {micros} is outside Python's") from exc
        if type_id == _T_BINARY:
            return self._slice(body + 4, self._uint(self.value, body, 4))
        if type_id == _T_LONG_STR:
            return self._text(body + 4, self._uint(self.value, body, 4))
        raise UnsupportedDataError("<variant value>", pos, f"primitive type {type_id} is not supported")

    def _container(self, pos: int, info: int, depth: int, is_object: bool) -> Any:
        offset_size = (info & 0x3) + 1
        id_size = ((info >> 2) & 0x3) + 1 if is_object else 0
        large = info & (0x10 if is_object else 0x4)
        count_size = 4 if large else 1
        count = self._uint(self.value, pos + 1, count_size)
        ids_at = pos + 1 + count_size
        offsets_at = ids_at + count * id_size
        data_at = offsets_at + (count + 1) * offset_size
        if data_at > len(self.value):
            raise self._fail("value", pos, f"container of {count} elements exceeds the value length")
        offsets = [self._uint(self.value, offsets_at + i * offset_size, offset_size) for i in range(count)]
        items = [self.read(data_at + offset, depth + 1) for offset in offsets]
        if not is_object:
            return items
        result = {}
        for i, item in enumerate(items):
            field_id = self._uint(self.value, ids_at + i * id_size, id_size)
            if field_id >= len(self.keys):
                raise self._fail("value", ids_at + i * id_size, f"field id {field_id} not in the dictionary")
            result[self.keys[field_id]] = item
        return result


def decode_variant(value: bytes, metadata: bytes) -> Any:
    """Decode a variant back to Python values (objects → dict, arrays → list, decimals → Decimal, timestamp →
    aware UTC datetime, timestamp_ntz → naive datetime, date → date, binary → bytes).

    Malformed bytes raise :class:`CorruptDataError` naming the offset; unknown types
    :class:`UnsupportedDataError`.
    """
    return _Reader(value, metadata).read(0)
