"""TABLE_MAP_EVENT (type 19) decoding, with MySQL 8 / MariaDB 10.5+ optional metadata.

Layout (mysql-server ``libs/mysql/binlog/event/rows_event.{h,cpp}`` ``Table_map_event``; MariaDB
``sql/log_event.cc``; ``docs/formats/mysql-binlog.md`` "TABLE_MAP"), after the 19-byte common header:

* post-header: table_id (6 bytes LE, 4 when the FDE's post_header_len for TABLE_MAP is 6), flags u16;
* body: schema (u8 length + name + NUL), table (u8 length + name + NUL), column count (packed int),
  column types (1 byte each), metadata block (packed length + per-column metadata, see
  :func:`~spark_logsource.mysql.decode.column_types.metadata_size`), NULL-able bitmap (``(n + 7) / 8`` bytes,
  bit i = column i, LSB first), then optional-metadata TLVs to the end: type u8, length (packed), value.

Per-type metadata is stored as one integer ``meta`` exactly as ``mariadb-binlog -vv`` prints it
(``meta=N``): 1-byte values as is; VARCHAR and BIT as u16 LE; NEWDECIMAL, STRING, ENUM and SET as the
"big-endian pair" ``b0 << 8 | b1``. ``real_type`` resolves STRING columns to ENUM / SET / STRING
(including the CHAR > 255 bytes quirk: ``real_type = b0 | 0x30`` when ``b0 & 0x30 != 0x30``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import TruncatedDataError
from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int

__all__ = ["ColumnInfo", "TableMap", "parse_table_map"]

# Optional metadata field types (mysql-server ``Table_map_event::Optional_metadata_field_type``).
SIGNEDNESS = 1
DEFAULT_CHARSET = 2
COLUMN_CHARSET = 3
COLUMN_NAME = 4
SET_STR_VALUE = 5
ENUM_STR_VALUE = 6
GEOMETRY_TYPE = 7
SIMPLE_PRIMARY_KEY = 8
PRIMARY_KEY_WITH_PREFIX = 9
ENUM_AND_SET_DEFAULT_CHARSET = 10
ENUM_AND_SET_COLUMN_CHARSET = 11
COLUMN_VISIBILITY = 12
VECTOR_DIMENSIONALITY = 13


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One column of a TABLE_MAP.

    ``type`` is the binlog type code; ``real_type`` the resolved type (ENUM/SET/STRING for STRING columns,
    else ``type``); ``meta`` the per-type metadata integer (see the module docstring). ``unsigned`` is None
    when no SIGNEDNESS metadata covers the column; ``charset`` is the collation id (None unknown);
    ``name``/``enum_values``/``set_values``/``geometry_type`` come from optional metadata when present.
    """

    index: int
    type: int
    real_type: int
    meta: int | tuple[int, ...]
    nullable: bool
    name: str | None = None
    unsigned: bool | None = None
    charset: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None

    @property
    def max_length(self) -> int:
        """Declared length in bytes for STRING-family columns (CHAR>255 quirk applied), else 0."""
        if self.type in (ct.STRING, ct.ENUM, ct.SET) and isinstance(self.meta, int):
            return string_length_from_meta(self.meta)
        return 0


@dataclass(frozen=True, slots=True)
class TableMap:
    """A decoded TABLE_MAP event. ``row_decoder_cache`` is private to rows.py (per-column decoders)."""

    table_id: int
    flags: int
    database: str
    table: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[int, ...] | None = None
    row_decoder_cache: dict[Hashable, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def key_for(self, i: int) -> str:
        """Column name, or ``@{i+1}`` when names are unknown (as mysqlbinlog prints)."""
        name = self.columns[i].name
        return name if name is not None else f"@{i + 1}"


def string_length_from_meta(meta: int) -> int:
    """Max byte length of a STRING/ENUM/SET column from its metadata (the CHAR>255 quirk,
    ``docs/formats/mysql-binlog.md`` "TABLE_MAP")."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte1


def _real_type(type_code: int, meta: int) -> int:
    if type_code == ct.STRING and meta >= 256:
        byte0 = meta >> 8
        return byte0 | 0x30 if (byte0 & 0x30) != 0x30 else byte0
    return type_code


class _Cursor:
    """Bounded reader over a bytes object; every read checks the bytes available."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, pos, end

    def take(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > self.end:
            raise BinlogDecodeError(self.pos, f"TABLE_MAP {what} needs {size} bytes, {self.end - self.pos} left",
                                    TruncatedDataError)
        start = self.pos
        self.pos += size
        return self.buf[start:self.pos]

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def uint(self, size: int, what: str) -> int:
        return int.from_bytes(self.take(size, what), "little")

    def packed(self, what: str) -> int:
        if self.pos >= self.end:
            raise BinlogDecodeError(self.pos, f"TABLE_MAP {what} missing", TruncatedDataError)
        value, new_pos = read_packed_int(self.buf, self.pos)
        if new_pos > self.end:
            raise BinlogDecodeError(self.pos, f"TABLE_MAP {what} cut short", TruncatedDataError)
        self.pos = new_pos
        return value

    def at_end(self) -> bool:
        return self.pos >= self.end


def _read_metadata(types: bytes, cur: _Cursor) -> list[int]:
    metas = []
    for type_code in types:
        size = ct.metadata_size(type_code)
        if size == 0:
            metas.append(0)
            continue
        raw = cur.take(size, "column metadata")
        if size == 1:
            metas.append(raw[0])
        elif type_code in (ct.VARCHAR, ct.BIT):
            metas.append(raw[0] | raw[1] << 8)
        else:  # NEWDECIMAL, STRING, VAR_STRING, ENUM, SET: big-endian pair
            metas.append(raw[0] << 8 | raw[1])
    return metas


def _bits_msb_first(raw: bytes, count: int) -> list[bool]:
    return [bool(raw[k >> 3] & (0x80 >> (k & 7))) for k in range(min(count, len(raw) * 8))]


def _read_strings(cur: _Cursor, what: str) -> tuple[str, ...]:
    count = cur.packed(what)
    if count > cur.end - cur.pos:
        raise BinlogDecodeError(cur.pos, f"TABLE_MAP {what}: {count} values cannot fit")
    values = []
    for _ in range(count):
        size = cur.packed(what)
        values.append(cur.take(size, what).decode("utf-8", "replace"))
    return tuple(values)


def _read_charsets(cur: _Cursor, ncols: int, *, default_form: bool) -> list[int]:
    """DEFAULT_CHARSET-style (default + (index, collation) pairs) or COLUMN_CHARSET-style (one per column)."""
    if default_form:
        default = cur.packed("default charset")
        result = [default] * ncols
        while not cur.at_end():
            index = cur.packed("charset column index")
            collation = cur.packed("charset collation")
            if index >= ncols:
                raise BinlogDecodeError(cur.pos, f"TABLE_MAP charset for column #{index} of {ncols}")
            result[index] = collation
        return result
    result = []
    while not cur.at_end():
        result.append(cur.packed("column charset"))
    return result


def parse_table_map(body: bytes | memoryview, *, table_id_size: int) -> TableMap:
    """Decode a TABLE_MAP event body (after the 19-byte common header, CRC removed); errors are
    :class:`BinlogDecodeError` at positions in the body."""
    buf = bytes(body)
    cur = _Cursor(buf, 0, len(buf))
    table_id = cur.uint(table_id_size, "table id")
    flags = cur.uint(2, "flags")
    db_len = cur.u8("schema length")
    database = cur.take(db_len, "schema name").decode("utf-8", "replace")
    cur.take(1, "schema terminator")
    table_len = cur.u8("table length")
    table = cur.take(table_len, "table name").decode("utf-8", "replace")
    cur.take(1, "table terminator")
    ncols = cur.packed("column count")
    if ncols > cur.end - cur.pos:
        raise BinlogDecodeError(cur.pos, f"TABLE_MAP column count {ncols} cannot fit")
    types = cur.take(ncols, "column types")
    meta_len = cur.packed("metadata length")
    meta_cur = _Cursor(buf, cur.pos, cur.pos + meta_len)
    cur.take(meta_len, "metadata block")
    metas = _read_metadata(types, meta_cur)
    null_bits = cur.take((ncols + 7) // 8, "null bitmap")
    real_types = [_real_type(t, m) for t, m in zip(types, metas, strict=True)]

    opt: dict[int, Any] = {}
    while not cur.at_end():
        field_type = cur.u8("optional metadata type")
        length = cur.packed("optional metadata length")
        value = _Cursor(buf, cur.pos, cur.pos + length)
        cur.take(length, "optional metadata value")
        opt[field_type] = value

    numeric = [i for i, t in enumerate(real_types) if t in ct.NUMERIC_TYPES]
    character = [i for i, t in enumerate(real_types) if t in ct.CHARACTER_TYPES]
    enum_set = [i for i, t in enumerate(real_types) if t in ct.ENUM_SET_TYPES]
    enums = [i for i in enum_set if real_types[i] == ct.ENUM]
    sets = [i for i in enum_set if real_types[i] == ct.SET]
    geometries = [i for i, t in enumerate(real_types) if t == ct.GEOMETRY]

    unsigned: dict[int, bool] = {}
    if SIGNEDNESS in opt:
        c = opt[SIGNEDNESS]
        bits = _bits_msb_first(c.take(c.end - c.pos, "signedness"), len(numeric))
        unsigned = dict(zip(numeric, bits, strict=False))
    charsets: dict[int, int] = {}
    for kind, cols in ((DEFAULT_CHARSET, character), (COLUMN_CHARSET, character),
                       (ENUM_AND_SET_DEFAULT_CHARSET, enum_set), (ENUM_AND_SET_COLUMN_CHARSET, enum_set)):
        if kind in opt:
            ids = _read_charsets(opt[kind], len(cols),
                                 default_form=kind in (DEFAULT_CHARSET, ENUM_AND_SET_DEFAULT_CHARSET))
            charsets.update(zip(cols, ids, strict=False))
    names: list[str] = []
    if COLUMN_NAME in opt:
        c = opt[COLUMN_NAME]
        while not c.at_end():
            names.append(c.take(c.packed("column name length"), "column name").decode("utf-8", "replace"))
    enum_values: dict[int, tuple[str, ...]] = {}
    if ENUM_STR_VALUE in opt:
        c = opt[ENUM_STR_VALUE]
        for i in enums:
            if c.at_end():
                break
            enum_values[i] = _read_strings(c, "enum values")
    set_values: dict[int, tuple[str, ...]] = {}
    if SET_STR_VALUE in opt:
        c = opt[SET_STR_VALUE]
        for i in sets:
            if c.at_end():
                break
            set_values[i] = _read_strings(c, "set values")
    geometry_types: dict[int, int] = {}
    if GEOMETRY_TYPE in opt:
        c = opt[GEOMETRY_TYPE]
        for i in geometries:
            if c.at_end():
                break
            geometry_types[i] = c.packed("geometry type")
    primary_key: tuple[int, ...] | None = None
    if SIMPLE_PRIMARY_KEY in opt:
        c = opt[SIMPLE_PRIMARY_KEY]
        keys = []
        while not c.at_end():
            keys.append(c.packed("primary key column"))
        primary_key = tuple(keys)
    elif PRIMARY_KEY_WITH_PREFIX in opt:
        c = opt[PRIMARY_KEY_WITH_PREFIX]
        keys = []
        while not c.at_end():
            keys.append(c.packed("primary key column"))
            c.packed("primary key prefix")
        primary_key = tuple(keys)

    columns = tuple(
        ColumnInfo(
            index=i, type=types[i], real_type=real_types[i], meta=metas[i],
            nullable=bool(null_bits[i >> 3] & (1 << (i & 7))),
            name=names[i] if i < len(names) else None,
            unsigned=unsigned.get(i), charset=charsets.get(i),
            enum_values=enum_values.get(i), set_values=set_values.get(i),
            geometry_type=geometry_types.get(i),
        )
        for i in range(ncols)
    )
    return TableMap(table_id=table_id, flags=flags, database=database, table=table, columns=columns,
                    primary_key=primary_key)
