"""DocDB keys and values of a write batch's ``write_pairs``: buffers in, columns out.

Encodings (``docs/formats/yugabyte-wal.md``, "DocDB keys and values"): a key is an optional table prefix, an
optional hash part (``G`` + big-endian 16-bit hash + hashed components + ``!``), the range components + ``!``,
then subkeys (``K`` + signed varint column id, ``J`` + signed varint system column id: ``J\\x80`` is the row's
liveness column). Key components are order-preserving encodings; values are a value-type byte and a plain
big-endian body, or a packed row (``z``). Nothing here knows files: failures are :class:`DecodeError`\\ s with a
position inside the key or value, and :func:`decode_pairs` turns them into a per-row ``decode_error`` text
(the raw bytes stay in the row), so one odd value never hides the rest of a write.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import DecodeError
from spark_logsource.yugabyte.catalog import TableSchema
from spark_logsource.yugabyte.proto import uuid_text

__all__ = ["DocKey", "decode_doc_key", "decode_pairs", "decode_value"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_u16 = struct.Struct(">H").unpack_from
_u32 = struct.Struct(">I").unpack_from
_i32 = struct.Struct(">i").unpack_from
_u64 = struct.Struct(">Q").unpack_from
_i64 = struct.Struct(">q").unpack_from
_f32 = struct.Struct(">f").unpack_from
_f64 = struct.Struct(">d").unpack_from
_le32 = struct.Struct("<I").unpack_from

GROUP_END = 0x21  # '!'
_TEXT_TYPES = frozenset({"STRING", "JSONB", "INET", "NULL_VALUE_TYPE", "None"})
#: Packed-row version byte of the second format (``|``): recognised, not decoded.
PACKED_V2 = 0x7C


# ---- varints (YugabyteDB's fast varints: a unary length prefix, big-endian magnitude) -------------------------

def _prefix_length(first: int) -> int:
    n = 1
    mask = 0x80
    while first & mask:
        n += 1
        mask >>= 1
        if mask == 0:
            break
    return n


def read_signed_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A signed fast varint: sign bit (1 = non-negative), then the unary length, then the magnitude."""
    if pos >= end:
        raise DecodeError(pos, "signed varint runs past the end")
    first = buf[pos]
    negative = not first & 0x80
    if negative:
        first ^= 0xFF
    n = _prefix_length((first << 1) & 0xFF)
    if n > 7:
        raise DecodeError(pos, "signed varint longer than 7 bytes")
    if pos + n > end:
        raise DecodeError(pos, "signed varint runs past the end")
    raw = int.from_bytes(buf[pos:pos + n], "big")
    if negative:
        raw ^= (1 << (8 * n)) - 1
    value = raw & ((1 << (8 * n - n - 1)) - 1)
    return (-value if negative else value), pos + n


def read_unsigned_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned fast varint: the unary length prefix, then the magnitude (0..127 is one byte)."""
    if pos >= end:
        raise DecodeError(pos, "unsigned varint runs past the end")
    n = _prefix_length(buf[pos])
    if n > 8:
        raise DecodeError(pos, "unsigned varint longer than 8 bytes")
    if pos + n > end:
        raise DecodeError(pos, "unsigned varint runs past the end")
    raw = int.from_bytes(buf[pos:pos + n], "big")
    return raw & ((1 << (8 * n - n)) - 1), pos + n


# ---- key components ----------------------------------------------------------------------------------------

def _zero_encoded(buf: bytes, pos: int, end: int, descending: bool) -> tuple[bytes, int]:
    """A string in a key: ``00`` escaped as ``00 01`` and terminated by ``00 00`` (all bytes inverted when desc)."""
    zero, escape = (0xFF, 0xFE) if descending else (0x00, 0x01)
    out = bytearray()
    start = pos
    while True:
        hit = buf.find(bytes((zero,)), pos, end)
        if hit < 0 or hit + 1 >= end:
            raise DecodeError(start, "unterminated string in key")
        out += buf[pos:hit]
        marker = buf[hit + 1]
        if marker == zero:
            pos = hit + 2
            break
        if marker != escape:
            raise DecodeError(hit, f"bad escape 0x{marker:02x} in key string")
        out.append(zero)
        pos = hit + 2
    if descending:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out), pos


def _text(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _float_key(bits: int, width: int) -> int:
    sign = 1 << (width - 1)
    return bits ^ sign if bits & sign else ~bits & ((1 << width) - 1)


def _need(buf: bytes, pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise DecodeError(pos, f"{what} runs past the end of the key")


def _fixed_bits(buf: bytes, pos: int, end: int, width: int, descending: bool, what: str) -> int:
    """The big-endian ``width``-byte field at ``pos`` as an unsigned int; a descending one's bits flipped back."""
    _need(buf, pos, width, end, what)
    raw: int = (_u32 if width == 4 else _u64)(buf, pos)[0]
    return ~raw & ((1 << (8 * width)) - 1) if descending else raw


def read_key_component(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
    """One primitive key component at ``buf[pos]`` (its type byte) → (Python value, next position)."""
    t = buf[pos]
    pos += 1
    if t in (0x53, 0x61):  # S String, a StringDesc
        data, pos = _zero_encoded(buf, pos, end, t == 0x61)
        return _text(data), pos
    if t in (0x48, 0x65):  # H Int32, e Int32Desc
        return _as_i32(_fixed_bits(buf, pos, end, 4, t == 0x65, "int32") ^ 0x80000000), pos + 4
    if t in (0x49, 0x62, 0x73, 0x63):  # I Int64, b Int64Desc, s Timestamp, c TimestampDesc
        value = _as_i64(_fixed_bits(buf, pos, end, 8, t in (0x62, 0x63), "int64") ^ 0x8000000000000000)
        if t in (0x73, 0x63):
            return _timestamp(value, pos - 1), pos + 8
        return value, pos + 8
    if t in (0x4F, 0x67):  # O UInt32, g UInt32Desc
        return _fixed_bits(buf, pos, end, 4, t == 0x67, "uint32"), pos + 4
    if t in (0x55, 0x6A):  # U UInt64, j UInt64Desc
        return _fixed_bits(buf, pos, end, 8, t == 0x6A, "uint64"), pos + 8
    if t in (0x44, 0x4C):  # D Double, L DoubleDesc
        raw = _fixed_bits(buf, pos, end, 8, t == 0x4C, "double")
        return struct.unpack(">d", _float_key(raw, 64).to_bytes(8, "big"))[0], pos + 8
    if t in (0x43, 0x4D):  # C Float, M FloatDesc
        raw = _fixed_bits(buf, pos, end, 4, t == 0x4D, "float")
        return struct.unpack(">f", _float_key(raw, 32).to_bytes(4, "big"))[0], pos + 4
    if t in (0x54, 0x68):  # T True, h TrueDesc
        return True, pos
    if t in (0x46, 0x69):  # F False, i FalseDesc
        return False, pos
    if t in (0x24, 0x7C):  # $ NullLow, | NullHigh
        return None, pos
    raise DecodeError(pos - 1, f"unsupported key component type {chr(t)!r} (0x{t:02x})")


def _timestamp(micros: int, pos: int) -> dt.datetime:
    """Microseconds since the Unix epoch as an aware datetime (DecodeError outside years 1..9999)."""
    try:
        return _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise DecodeError(pos, f"timestamp {micros} µs is outside the years 1..9999") from None


def _as_i32(u: int) -> int:
    return u - (1 << 32) if u >= 1 << 31 else u


def _as_i64(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


@dataclass(slots=True)
class DocKey:
    """A decoded DocDB key: table prefix, hash, components, and the subkey after them."""

    hash: int | None
    hashed: list[Any]
    range: list[Any]
    end: int  # position just after the doc key's last '!'
    colocation_id: int | None = None
    cotable_id: str | None = None
    #: ``("column", id)``, ``("system", id)``, ``("other", hex)`` or None (the whole row).
    subkey: tuple[str, Any] | None = None


def _components(buf: bytes, pos: int, end: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while True:
        if pos >= end:
            raise DecodeError(pos, "key ends before its group end '!'")
        if buf[pos] == GROUP_END:
            return out, pos + 1
        value, pos = read_key_component(buf, pos, end)
        out.append(value)


def decode_doc_key(key: bytes) -> DocKey:
    """The DocKey at the start of ``key`` and the subkey after it."""
    end = len(key)
    pos = 0
    colocation_id = None
    cotable_id = None
    if pos < end and key[pos] == 0x30:  # '0' ColocationId, BE32
        _need(key, 1, 4, end, "colocation id")
        colocation_id = _u32(key, 1)[0]
        pos = 5
    elif pos < end and key[pos] == 0x79:  # 'y' TableId, 16 bytes
        _need(key, 1, 16, end, "table id")
        cotable_id = uuid_text(bytes(key[1:17]))
        pos = 17
    hash_value = None
    hashed: list[Any] = []
    if pos < end and key[pos] == 0x47:  # 'G' UInt16Hash
        _need(key, pos + 1, 2, end, "hash")
        hash_value = _u16(key, pos + 1)[0]
        hashed, pos = _components(key, pos + 3, end)
    ranged, pos = _components(key, pos, end)
    doc = DocKey(hash_value, hashed, ranged, pos, colocation_id, cotable_id)
    if pos < end:
        t = key[pos]
        # Collection subkeys after a column id are kept in raw_key only.
        if t == 0x4B:  # K ColumnId
            column_id = read_signed_varint(key, pos + 1, end)[0]
            if not -(1 << 31) <= column_id < 1 << 31:  # the column_id column is an int32
                raise DecodeError(pos + 1, f"column id {column_id} outside int32")
            doc.subkey = ("column", column_id)
        elif t == 0x4A:  # J SystemColumnId
            doc.subkey = ("system", read_signed_varint(key, pos + 1, end)[0])
        else:
            doc.subkey = ("other", bytes(key[pos:]).hex())
    return doc


# ---- values --------------------------------------------------------------------------------------------------

def _skip_control_fields(buf: bytes, pos: int, end: int) -> int:
    """Skip the optional merge flags (``k``), TTL (``t``) and user timestamp (``u``) before a value."""
    if pos < end and buf[pos] == 0x6B:
        _, pos = read_unsigned_varint(buf, pos + 1, end)
    if pos < end and buf[pos] == 0x74:
        _, pos = read_signed_varint(buf, pos + 1, end)
    if pos < end and buf[pos] == 0x75:
        if pos + 9 > end:
            raise DecodeError(pos, "user timestamp runs past the end of the value")
        pos += 9
    return pos


def _body(buf: bytes, pos: int, end: int, column_type: str | None) -> Any:
    """A primitive value body (type byte at ``pos``) filling ``buf[pos:end]``."""
    t = buf[pos]
    size = end - pos - 1
    p = pos + 1
    if t == 0x53 or t == 0x5C:  # S String, \ CollString (collation-encoded text)
        data = bytes(buf[p:end])
        if column_type in ("BINARY",):
            return data
        return _text(data)
    fixed = {0x48: 4, 0x49: 8, 0x4F: 4, 0x55: 8, 0x43: 4, 0x44: 8, 0x73: 8}.get(t)
    if fixed is not None:
        if size != fixed:
            raise DecodeError(pos, f"value of type {chr(t)!r} has {size} bytes, expected {fixed}")
        if t == 0x48:
            return _i32(buf, p)[0]
        if t == 0x49:
            return _i64(buf, p)[0]
        if t == 0x4F:
            return _u32(buf, p)[0]
        if t == 0x55:
            return _u64(buf, p)[0]
        if t == 0x43:
            return _f32(buf, p)[0]
        if t == 0x44:
            return _f64(buf, p)[0]
        return _timestamp(_i64(buf, p)[0], pos)
    if t in (0x54, 0x46):  # T / F
        if size:
            raise DecodeError(pos, "boolean value with a body")
        return t == 0x54
    if t == 0x24:  # $ NullLow
        return None
    if t == 0x32:  # 2 Jsonb: BE64 flags, then YugabyteDB's binary jsonb
        if size < 8:
            raise DecodeError(pos, "jsonb value shorter than its flags")
        return bytes(buf[p + 8:end])
    if t == 0x5F and size == 16:  # _ Uuid
        return uuid_text(bytes(buf[p:end]))
    raise DecodeError(pos, f"unsupported value type {chr(t)!r} (0x{t:02x})")


@dataclass(slots=True)
class DecodedValue:
    """A value: its type byte, and either a primitive, a packed row (name → value), a tombstone or nothing."""

    type_byte: int | None
    value: Any
    is_tombstone: bool = False
    is_packed: bool = False
    schema_version: int | None = None


def decode_packed_row(buf: bytes, pos: int, end: int, schema_for: Any) -> tuple[dict[str, Any], int]:
    """A packed row V1 at ``buf[pos]`` (``z``): (column name → value, schema version).

    ``schema_for(version)`` returns the :class:`TableSchema` of that version or None.
    """
    version, p = read_unsigned_varint(buf, pos + 1, end)
    schema: TableSchema | None = schema_for(version)
    if schema is None:
        raise DecodeError(pos, f"packed row of schema version {version}, which this log does not describe")
    n = schema.num_varlen
    head_end = p + 4 * n
    if head_end > end:
        raise DecodeError(p, f"packed row too short for {n} column end offsets")
    ends = [_le32(buf, p + 4 * i)[0] for i in range(n)]
    data = head_end
    size = end - data
    row: dict[str, Any] = {}
    cur = 0
    vi = 0
    for col in schema.packed_columns:
        if col.size is None:
            stop = ends[vi]
            vi += 1
        else:
            stop = cur + col.size
        if stop < cur or stop > size:
            raise DecodeError(data + cur, f"packed column {col.name!r} runs outside the row ({cur}..{stop} of {size})")
        row[col.name] = None if stop == cur else _body(buf, data + cur, data + stop, col.type)
        cur = stop
    if cur != size:
        raise DecodeError(data + cur, f"{size - cur} bytes after the last packed column")
    return row, version


def decode_value(value: bytes, column_type: str | None = None, schema_for: Any = None) -> DecodedValue:
    """A ``write_pairs`` value (control fields skipped)."""
    end = len(value)
    pos = _skip_control_fields(value, 0, end)
    if pos >= end:
        raise DecodeError(pos, "empty value")
    t = value[pos]
    if t == 0x58:  # X Tombstone
        return DecodedValue(t, None, is_tombstone=True)
    if t == 0x7A:  # z PackedRowV1
        row, version = decode_packed_row(value, pos, end, schema_for or (lambda v: None))
        return DecodedValue(t, row, is_packed=True, schema_version=version)
    if t == PACKED_V2:
        raise DecodeError(pos, "packed row V2 ('|') is not decoded")
    return DecodedValue(t, _body(value, pos, end, column_type))


# ---- the writes view's columns ----------------------------------------------------------------------------------

WRITE_COLUMNS = ("pair_index", "doc_key", "column_id", "column_name", "kind", "value", "is_tombstone",
                 "schema_version", "decode_error")
LIVENESS_COLUMN = 0


def _key_dict(doc: DocKey, schema: TableSchema | None) -> dict[str, Any]:
    out: dict[str, Any] = {"hash": doc.hash, "hashed": doc.hashed, "range": doc.range}
    if doc.colocation_id is not None:
        out["colocation_id"] = doc.colocation_id
    if doc.cotable_id is not None:
        out["cotable_id"] = doc.cotable_id
    if schema is not None and len(doc.hashed) == len(schema.hash_columns) and \
            len(doc.range) == len(schema.range_columns):
        out["key"] = dict(zip(schema.hash_columns + schema.range_columns, doc.hashed + doc.range, strict=True))
    return out


def decode_pairs(pairs: Sequence[tuple[bytes, bytes]], schema: TableSchema | None, schema_for: Any,
                 schema_version: int | None) -> dict[str, list[Any]]:
    """The writes view's columns for the ``write_pairs`` of one operation (one entry per pair, in order).

    ``schema`` (the latest schema) names unpacked columns; ``schema_for(version)`` gives packed rows' schemas.
    ``kind`` is ``insert_packed``, ``liveness``, ``insert_column`` (a column written with the row's liveness
    in the same operation), ``update_column``, ``set_null`` (a column tombstone) or ``delete_row``.
    """
    cols: dict[str, list[Any]] = {name: [] for name in WRITE_COLUMNS}
    decoded: list[tuple[DocKey | None, DecodedValue | None, str | None]] = []
    live_rows: set[bytes] = set()
    for key, value in pairs:
        doc = None
        val = None
        error = None
        try:
            doc = decode_doc_key(key)
            if doc.subkey == ("system", LIVENESS_COLUMN):
                live_rows.add(bytes(key[:doc.end]))
            column_type = None
            if doc.subkey is not None and doc.subkey[0] == "column" and schema is not None:
                column_type = schema.column_type(doc.subkey[1])
            val = decode_value(value, column_type, schema_for)
        except DecodeError as exc:
            error = str(exc)
        decoded.append((doc, val, error))
    for i, ((key, _), (doc, val, error)) in enumerate(zip(pairs, decoded, strict=True)):
        column_id = None
        column_name = None
        kind = None
        if doc is not None and doc.subkey is not None and doc.subkey[0] == "column":
            column_id = doc.subkey[1]
            column_name = schema.column_name(column_id) if schema is not None else None
        if val is not None and doc is not None:
            if val.is_packed:
                kind = "insert_packed"
            elif doc.subkey is None:
                kind = "delete_row" if val.is_tombstone else "row"
            elif doc.subkey == ("system", LIVENESS_COLUMN):
                kind = "liveness"
            elif doc.subkey[0] == "column":
                if val.is_tombstone:
                    kind = "set_null"
                else:
                    kind = "insert_column" if bytes(key[:doc.end]) in live_rows else "update_column"
            else:
                kind = "other"
        cols["pair_index"].append(i)
        cols["doc_key"].append(None if doc is None else _key_dict(doc, schema))
        cols["column_id"].append(column_id)
        cols["column_name"].append(column_name)
        cols["kind"].append(kind)
        cols["value"].append(None if val is None or val.is_tombstone or kind == "liveness" else val.value)
        cols["is_tombstone"].append(None if val is None else val.is_tombstone)
        cols["schema_version"].append(val.schema_version if val is not None and val.is_packed else schema_version)
        cols["decode_error"].append(error)
    return cols
