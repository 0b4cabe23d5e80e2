"""A small hand-written reader of the protobuf (proto2) wire format, enough for YugabyteDB's WAL messages.

Wire format (``docs/formats/yugabyte-wal.md``, "Protobuf wire format"): a message is a sequence of fields, each a
varint key ``field_number << 3 | wire_type`` then a value: wire type 0 a base-128 varint (at most 10 bytes),
1 eight little-endian bytes, 2 a varint length then that many bytes, 5 four little-endian bytes. Types 3/4
(groups) are not used by these messages and are refused. Fields may come in any order and repeat; for a
non-repeated field the last occurrence wins. Unknown fields are skipped (kept under ``field_<n>`` by
:func:`decode`), which is what lets one reader follow several YugabyteDB versions.

Decoders know buffers, not files: every failure is a :class:`~spark_logsource.errors.DecodeError` with the
position inside the buffer given; the framer turns it into a file offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import DecodeError

__all__ = [
    "FieldSpec",
    "MessageSpec",
    "decode",
    "iter_fields",
    "read_varint",
    "signed64",
]

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10
_MAX_DEPTH = 32
_unpack_q = struct.Struct("<Q").unpack_from
_unpack_i = struct.Struct("<I").unpack_from
_unpack_d = struct.Struct("<d").unpack_from
_unpack_f = struct.Struct("<f").unpack_from


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``buf[pos:end]`` → (value, next position)."""
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise DecodeError(start, "varint runs past the end of its message")
        if pos - start >= _MAX_VARINT_BYTES:
            raise DecodeError(start, "varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def signed64(value: int) -> int:
    """A varint read as ``int64`` (two's complement: negative numbers are 10-byte varints)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def signed32(value: int) -> int:
    """A varint read as ``int32`` (negative int32s are sign-extended to 64 bits on the wire)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def iter_fields(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, Any]]:
    """``(field_number, wire_type, value)`` for each field of the message in ``buf[start:end]``.

    ``value`` is an int for wire types 0, 1 and 5, and a ``(begin, stop)`` pair of positions in ``buf`` for wire
    type 2 (no copy is made: the caller slices what it keeps).
    """
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        key_pos = pos
        key, pos = read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError(key_pos, "field number 0")
        if wire == VARINT:
            value, pos = read_varint(buf, pos, end)
            yield number, wire, value
        elif wire == LEN:
            length, pos = read_varint(buf, pos, end)
            stop = pos + length
            if stop > end:
                raise DecodeError(key_pos, f"field {number}: length {length} runs past the end of its message")
            yield number, wire, (pos, stop)
            pos = stop
        elif wire == FIXED64:
            if pos + 8 > end:
                raise DecodeError(key_pos, f"field {number}: fixed64 runs past the end of its message")
            yield number, wire, _unpack_q(buf, pos)[0]
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise DecodeError(key_pos, f"field {number}: fixed32 runs past the end of its message")
            yield number, wire, _unpack_i(buf, pos)[0]
            pos += 4
        else:
            raise DecodeError(key_pos, f"field {number}: unsupported wire type {wire}")


# ---- schema-driven decoding into dicts (the "details" of a message, by field name) ----------------------------

#: Scalar kinds and the wire type each expects.
_WIRE_OF_KIND = {
    "int64": VARINT, "uint64": VARINT, "int32": VARINT, "uint32": VARINT, "bool": VARINT, "enum": VARINT,
    "fixed64": FIXED64, "double": FIXED64, "fixed32": FIXED32, "float": FIXED32,
    "bytes": LEN, "string": LEN, "id": LEN, "uuid": LEN, "raw": LEN, "message": LEN,
}


#: Kinds whose Python value is the wire value itself.
_PLAIN_KINDS = frozenset({"uint64", "uint32", "fixed64", "fixed32"})


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: ``kind`` says how to turn its wire value into a Python value.

    Kinds: int64/uint64/int32/uint32/bool/enum (varints), fixed64/double, fixed32/float, and for length-delimited
    fields: ``string`` (UTF-8 text), ``id`` (an ASCII id kept as text, hex if not ASCII), ``uuid`` (16 bytes →
    canonical UUID text), ``bytes`` (hex text), ``raw`` (Python bytes, for the caller), ``message`` (``message``
    spec). ``enum`` maps numbers to names (unknown numbers are kept as numbers).
    """

    name: str
    kind: str
    repeated: bool = False
    message: MessageSpec | None = None
    enum: dict[int, str] | None = None


@dataclass(slots=True)
class MessageSpec:
    """A message: field number → :class:`FieldSpec`. Specs may refer to each other (filled in after creation)."""

    name: str
    fields: dict[int, FieldSpec] = field(default_factory=dict)
    #: Decode each distinct byte string once (for messages repeated verbatim, such as schemas).
    cached: bool = False


_PRINTABLE = bytes(range(0x20, 0x7F))


def _ascii_or_hex(data: bytes) -> str:
    if not data.translate(None, _PRINTABLE):
        return data.decode("ascii")
    return data.hex()


def uuid_text(data: bytes) -> str:
    """16 bytes as a canonical lowercase UUID (``8-4-4-4-12``); other lengths as plain hex."""
    if len(data) != 16:
        return data.hex()
    h = data.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex()


_LEN_SCALARS: dict[str, Callable[[bytes], Any]] = {
    "string": _text,
    "id": _ascii_or_hex,
    "uuid": uuid_text,
    "bytes": bytes.hex,
    "raw": bytes,
}


def _scalar(spec: FieldSpec, wire: int, value: Any, buf: bytes) -> Any:
    kind = spec.kind
    if wire == LEN:
        begin, stop = value
        return _LEN_SCALARS[kind](bytes(buf[begin:stop]))
    if kind == "int64":
        return signed64(value)
    if kind == "int32":
        return signed32(value)
    if kind == "bool":
        return value != 0
    if kind == "enum":
        number = signed32(value)
        return spec.enum.get(number, number) if spec.enum else number
    if kind == "double":
        return struct.unpack("<d", value.to_bytes(8, "little"))[0]
    if kind == "float":
        return struct.unpack("<f", value.to_bytes(4, "little"))[0]
    return value  # uint64, uint32, fixed64, fixed32


def _packed(spec: FieldSpec, buf: bytes, begin: int, stop: int) -> list[Any]:
    """A packed repeated scalar field (proto2 ``[packed=true]``, or what a newer writer chose)."""
    wire = _WIRE_OF_KIND[spec.kind]
    out = []
    pos = begin
    while pos < stop:
        if wire == VARINT:
            value, pos = read_varint(buf, pos, stop)
        elif wire == FIXED64:
            if pos + 8 > stop:
                raise DecodeError(pos, f"{spec.name}: packed fixed64 runs past its field")
            value, pos = _unpack_q(buf, pos)[0], pos + 8
        else:
            if pos + 4 > stop:
                raise DecodeError(pos, f"{spec.name}: packed fixed32 runs past its field")
            value, pos = _unpack_i(buf, pos)[0], pos + 4
        out.append(_scalar(spec, wire, value, buf))
    return out


def _unknown(out: dict[str, Any], number: int, item: Any) -> None:
    name = f"field_{number}"
    if name in out:
        prev = out[name]
        out[name] = [*prev, item] if isinstance(prev, list) else [prev, item]
    else:
        out[name] = item


def decode(buf: bytes, spec: MessageSpec, start: int = 0, end: int | None = None, depth: int = 0) -> dict[str, Any]:
    """The message in ``buf[start:end]`` as a dict by field name (repeated fields as lists, in wire order).

    Unknown fields are kept as ``field_<n>`` (varints and fixed values as ints, length-delimited ones as hex).
    A field whose wire type does not match its spec raises :class:`DecodeError`. Messages whose spec is marked
    ``cached`` (schemas, repeated in every segment header) are decoded once per distinct byte string; callers
    treat the dicts as read-only.
    """
    end = len(buf) if end is None else end
    if depth > _MAX_DEPTH:
        raise DecodeError(start, f"{spec.name}: messages nested deeper than {_MAX_DEPTH}")
    if spec.cached:
        key = (spec.name, bytes(buf[start:end]))
        hit = _CACHE.get(key)
        if hit is None:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.clear()
            hit = _CACHE[key] = _decode(key[1], spec, 0, len(key[1]), depth)
        return hit
    return _decode(buf, spec, start, end, depth)


_CACHE: dict[tuple[str, bytes], dict[str, Any]] = {}
_CACHE_SIZE = 256


def _decode(buf: bytes, spec: MessageSpec, start: int, end: int, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fields = spec.fields
    pos = start
    while pos < end:
        key_pos = pos
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = read_varint(buf, pos, end)
        number = key >> 3
        wire = key & 7
        if number == 0:
            raise DecodeError(key_pos, "field number 0")
        # read the wire value
        if wire == VARINT:
            if pos < end and buf[pos] < 0x80:
                value: Any = buf[pos]
                pos += 1
            else:
                value, pos = read_varint(buf, pos, end)
        elif wire == LEN:
            if pos < end and buf[pos] < 0x80:
                length = buf[pos]
                pos += 1
            else:
                length, pos = read_varint(buf, pos, end)
            stop = pos + length
            if stop > end:
                raise DecodeError(key_pos, f"field {number}: length {length} runs past the end of its message")
            value = (pos, stop)
            pos = stop
        elif wire == FIXED64:
            if pos + 8 > end:
                raise DecodeError(key_pos, f"field {number}: fixed64 runs past the end of its message")
            value = _unpack_q(buf, pos)[0]
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise DecodeError(key_pos, f"field {number}: fixed32 runs past the end of its message")
            value = _unpack_i(buf, pos)[0]
            pos += 4
        else:
            raise DecodeError(key_pos, f"field {number}: unsupported wire type {wire}")
        fs = fields.get(number)
        if fs is None:
            _unknown(out, number, bytes(buf[value[0]:value[1]]).hex() if wire == LEN else value)
            continue
        kind = fs.kind
        if kind == "message":
            if wire != LEN:
                raise DecodeError(key_pos, f"{spec.name}.{fs.name}: wire type {wire} for a message")
            sub: MessageSpec = fs.message  # type: ignore[assignment]
            if sub.cached:
                item = decode(buf, sub, value[0], value[1], depth + 1)
            else:
                if depth >= _MAX_DEPTH:
                    raise DecodeError(key_pos, f"{sub.name}: messages nested deeper than {_MAX_DEPTH}")
                item = _decode(buf, sub, value[0], value[1], depth + 1)
        elif wire == _WIRE_OF_KIND[kind]:
            if kind in _PLAIN_KINDS:
                item = value
            elif kind == "int64":
                item = value - 0x10000000000000000 if value >= 0x8000000000000000 else value
            elif kind == "bool":
                item = value != 0
            else:
                item = _scalar(fs, wire, value, buf)
        elif wire == LEN and fs.repeated:
            out.setdefault(fs.name, []).extend(_packed(fs, buf, value[0], value[1]))
            continue
        else:
            raise DecodeError(key_pos, f"{spec.name}.{fs.name}: wire type {wire}, expected {_WIRE_OF_KIND[kind]}")
        if fs.repeated:
            lst = out.get(fs.name)
            if lst is None:
                out[fs.name] = [item]
            else:
                lst.append(item)
        else:
            out[fs.name] = item
    return out
