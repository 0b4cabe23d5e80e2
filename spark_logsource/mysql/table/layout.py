"""One table's column layout, its Arrow/Spark types, and the checked conversion of decoded values to them.

``docs/formats/mysql-typed.md`` "Type mapping" is the table this module implements. A :class:`ColumnSpec` is
one column as the server declared it (from a ``CREATE TABLE`` / ``ALTER TABLE`` (:mod:`.ddl`) or from a
TABLE_MAP's optional metadata (:func:`spec_from_table_map`)); a :class:`Layout` is the columns of the table in
binlog order. The view's ``before`` / ``after`` structs hold the union of every layout the table had
(:func:`union_columns`): a name whose type changed gets the narrowest type holding both (integers and decimals
widen), else a variant.

A decoded value that its column cannot hold (a zero date, text that is not in the column's character set, an
ENUM index without names) raises :class:`ValueMismatch`: the row becomes a corrupt-record row, never a guess.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import pyarrow as pa

from spark_logsource.arrow.columns import variant_field
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.tablemap import ColumnInfo, TableMap

__all__ = ["VARIANT", "ColumnSpec", "Layout", "ValueMismatch", "arrow_type", "cell_converter",
           "compatible_binlog_type", "enrich_table_map", "spec_from_table_map", "union_columns"]

#: Marker type of a variant column (a str, so that it survives pickling and compares by value).
VARIANT = "variant"
#: DECIMAL(p, s) with p above this is a string (Spark's and Arrow's decimal128 hold 38 digits).
MAX_DECIMAL_DIGITS = 38

#: JSON text → Python, numbers with a fraction as exact decimals (one decoder: building one per value is slow)
_JSON_DECODER = json.JSONDecoder(parse_float=Decimal)
#: kinds of :class:`ColumnSpec` → binlog real types a column of that kind is written as (TABLE_MAP check)
_BINLOG_TYPES: dict[str, frozenset[int]] = {
    "float": frozenset({ct.FLOAT}), "double": frozenset({ct.DOUBLE}),
    "decimal": frozenset({ct.NEWDECIMAL, ct.DECIMAL}), "date": frozenset({ct.DATE, ct.NEWDATE}),
    "datetime": frozenset({ct.DATETIME, ct.DATETIME2}), "timestamp": frozenset({ct.TIMESTAMP, ct.TIMESTAMP2}),
    "time": frozenset({ct.TIME, ct.TIME2}), "year": frozenset({ct.YEAR}),
    "char": frozenset({ct.STRING, ct.VARCHAR, ct.VAR_STRING}),
    "blob": frozenset({ct.BLOB, ct.TINY_BLOB, ct.MEDIUM_BLOB, ct.LONG_BLOB}),
    "enum": frozenset({ct.ENUM}), "set": frozenset({ct.SET}), "bit": frozenset({ct.BIT}),
    # MySQL's JSON is its own binary type; MariaDB's is a LONGTEXT (a BLOB in the binlog)
    "json": frozenset({ct.JSON, ct.BLOB, ct.TINY_BLOB, ct.MEDIUM_BLOB, ct.LONG_BLOB}),
    "geometry": frozenset({ct.GEOMETRY}), "vector": frozenset({ct.VECTOR}),
}
_INT_TYPES = {1: ct.TINY, 2: ct.SHORT, 3: ct.INT24, 4: ct.LONG, 8: ct.LONGLONG}
_INT_BYTES = {v: k for k, v in _INT_TYPES.items()}


class ValueMismatch(ValueError):
    """A decoded value its column's type cannot hold (the message names the column)."""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column as declared.

    ``kind``: int, float, double, decimal, date, datetime, timestamp, time, year, char (CHAR / VARCHAR /
    BINARY / VARBINARY), blob (TEXT / BLOB), enum, set, bit, json, geometry, vector. ``binary``: a char or blob
    column of the binary character set (BINARY, VARBINARY, BLOB). ``charset``: the character set name when the
    declaration or the TABLE_MAP gives one. ``size``: bytes of an int (1, 2, 3, 4, 8), bits of a BIT.
    """

    name: str
    kind: str
    unsigned: bool = False
    size: int = 0
    precision: int = 0
    scale: int = 0
    binary: bool = False
    charset: str | None = None
    values: tuple[str, ...] | None = None  # ENUM / SET names
    nullable: bool = True

    @property
    def key(self) -> str:
        """Column names are case-insensitive in MySQL and MariaDB."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Layout:
    """The columns of a table in the order of its rows' images, the table's default character set and its primary
    key's column names (empty: none declared, or not known)."""

    columns: tuple[ColumnSpec, ...]
    default_charset: str | None = None
    primary_key: tuple[str, ...] = ()
    #: the column renames (old, new) of the ALTER that made this layout, in order; and the columns it added that
    #: the server fills with a value in the rows already there (NOT NULL, or a DEFAULT other than NULL)
    renames: tuple[tuple[str, str], ...] = ()
    filled: tuple[str, ...] = ()

    def index(self, name: str) -> int | None:
        key = name.lower()
        return next((i for i, c in enumerate(self.columns) if c.key == key), None)


# -- Arrow types -----------------------------------------------------------------------------------------------
def arrow_type(spec: ColumnSpec) -> pa.DataType | str:
    """The Arrow type (``docs/formats/mysql-typed.md`` "Type mapping") of a column, or :data:`VARIANT`."""
    k = spec.kind
    if k == "int":
        if spec.size == 8:
            return pa.decimal128(20, 0) if spec.unsigned else pa.int64()
        if spec.size == 4:
            return pa.int64() if spec.unsigned else pa.int32()
        if spec.size == 3:
            return pa.int32()
        if spec.size == 2:
            return pa.int32() if spec.unsigned else pa.int16()
        return pa.int16() if spec.unsigned else pa.int8()
    if k == "float":
        return pa.float32()
    if k == "double":
        return pa.float64()
    if k == "decimal":
        if spec.precision > MAX_DECIMAL_DIGITS:
            return pa.string()
        return pa.decimal128(max(spec.precision, 1), spec.scale)
    if k == "date":
        return pa.date32()
    if k == "datetime":
        return pa.timestamp("us")
    if k == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if k == "year":
        return pa.int32()
    if k in ("char", "blob"):
        return pa.binary() if spec.binary else pa.string()
    if k in ("time", "enum", "set"):
        return pa.string()
    if k in ("bit", "geometry", "vector"):
        return pa.binary()
    if k == "json":
        return VARIANT
    raise ValueError(f"column {spec.name!r}: no Arrow type for kind {k!r}")


_INT_ORDER = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
_INT_DIGITS = {pa.int8(): 3, pa.int16(): 5, pa.int32(): 10, pa.int64(): 19}


def _digits(t: pa.DataType) -> tuple[int, int] | None:
    """(integer digits, scale) a type holds exactly, for integers and decimals."""
    if t in _INT_DIGITS:
        return _INT_DIGITS[t], 0
    if pa.types.is_decimal128(t):
        return t.precision - t.scale, t.scale
    return None


def widen(a: pa.DataType | str, b: pa.DataType | str) -> pa.DataType | str:
    """The narrowest column type holding every value of ``a`` and of ``b`` exactly; :data:`VARIANT` if none."""
    if isinstance(a, str) or isinstance(b, str):
        return VARIANT
    if a == b:
        return a
    if a in _INT_ORDER and b in _INT_ORDER:
        return max(a, b, key=_INT_ORDER.index)
    if {a, b} == {pa.float32(), pa.float64()}:
        return pa.float64()
    da, db = _digits(a), _digits(b)
    if da is not None and db is not None:
        whole, scale = max(da[0], db[0]), max(da[1], db[1])
        if whole + scale <= MAX_DECIMAL_DIGITS:
            return pa.decimal128(whole + scale, scale)
    return VARIANT


def union_columns(layouts: Sequence[Layout]) -> list[tuple[str, pa.DataType | str]]:
    """Every column name of every layout, in first-seen order, with a type holding all of its types."""
    out: dict[str, tuple[str, pa.DataType | str]] = {}
    for layout in layouts:
        for spec in layout.columns:
            t = arrow_type(spec)
            if spec.key in out:
                name, old = out[spec.key]
                out[spec.key] = (name, widen(old, t))
            else:
                out[spec.key] = (spec.name, t)
    return list(out.values())


def struct_type(columns: Sequence[tuple[str, pa.DataType | str]]) -> pa.StructType:
    return pa.struct([variant_field(n) if isinstance(t, str) else pa.field(n, t) for n, t in columns])


# -- value conversion ------------------------------------------------------------------------------------------
def _fail(spec: ColumnSpec, value: Any, why: str) -> ValueMismatch:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValueMismatch(f"column {spec.name!r} ({spec.kind}): {shown} {why}")


def _base_converter(spec: ColumnSpec) -> Callable[[Any], Any]:
    """Decoded value (:mod:`.values`) → the Python value of the column's own Arrow type."""
    k = spec.kind
    target = arrow_type(spec)
    if k == "int":
        bits = spec.size * 8
        lo, hi = (0, (1 << bits) - 1) if spec.unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        as_decimal = pa.types.is_decimal(target) if not isinstance(target, str) else False

        def conv_int(v: Any) -> Any:
            if type(v) is not int:
                raise _fail(spec, v, "is not an integer")
            if not lo <= v <= hi:
                raise _fail(spec, v, "is out of the column's range")
            return Decimal(v) if as_decimal else v

        return conv_int
    if k in ("float", "double"):
        def conv_float(v: Any) -> Any:
            if type(v) is not float:
                raise _fail(spec, v, "is not a floating-point number")
            return v

        return conv_float
    if k == "decimal":
        as_text = spec.precision > MAX_DECIMAL_DIGITS
        # DECIMAL(p, s) holds a value when it has at most s fraction digits (trailing zeros aside) and p digits in
        # all at scale s; a TABLE_MAP that disagrees with the declaration can give one that does not fit
        checked = 0 < spec.precision <= MAX_DECIMAL_DIGITS
        limit = 10**spec.precision

        def conv_decimal(v: Any) -> Any:
            if not isinstance(v, Decimal):
                raise _fail(spec, v, "is not a decimal")
            if as_text:
                return str(v)
            if checked and not _fits_decimal(v, spec.scale, limit):
                raise _fail(spec, v, f"does not fit DECIMAL({spec.precision},{spec.scale})")
            return v

        return conv_decimal
    if k == "date":
        def conv_date(v: Any) -> Any:
            if type(v) is not dt.date:
                raise _fail(spec, v, "is not a date Spark can hold (zero or invalid date)")
            return v

        return conv_date
    if k == "datetime":
        def conv_datetime(v: Any) -> Any:
            if not isinstance(v, dt.datetime) or v.tzinfo is not None:
                raise _fail(spec, v, "is not a date-time Spark can hold (zero or invalid date)")
            return v

        return conv_datetime
    if k == "timestamp":
        def conv_timestamp(v: Any) -> Any:
            if not isinstance(v, dt.datetime) or v.tzinfo is None:
                raise _fail(spec, v, "is not a timestamp Spark can hold (the zero timestamp)")
            return v

        return conv_timestamp
    if k in ("time", "enum", "set") or (k in ("char", "blob") and not spec.binary):
        names = spec.values

        def conv_text(v: Any) -> Any:
            if type(v) is str:
                return v
            if type(v) is int and names is not None:
                if k == "enum":
                    if v == 0:
                        return ""
                    if v <= len(names):
                        return names[v - 1]
                elif v < 1 << len(names):
                    return ",".join(n for bit, n in enumerate(names) if v >> bit & 1)
            if type(v) is int:
                raise _fail(spec, v, f"is an {k.upper()} number the column's names do not cover")
            raise _fail(spec, v, "is not text in the column's character set")

        return conv_text
    if k == "year":
        def conv_year(v: Any) -> Any:
            if type(v) is not int:
                raise _fail(spec, v, "is not a year")
            return v

        return conv_year
    if k == "bit":
        width = (spec.size + 7) // 8

        def conv_bit(v: Any) -> Any:
            if type(v) is not int or v < 0 or v.bit_length() > width * 8:
                raise _fail(spec, v, "is not a BIT value of the column's width")
            return v.to_bytes(width, "big")

        return conv_bit
    if k == "json":
        def conv_json(v: Any) -> Any:
            if isinstance(v, bytes):
                try:
                    v = v.decode("utf-8")
                except UnicodeDecodeError:
                    raise _fail(spec, v, "is not UTF-8 JSON text") from None
            if isinstance(v, str):  # MariaDB: JSON is LONGTEXT; numbers kept exact as decimals
                try:
                    return _JSON_DECODER.decode(v)
                except ValueError:
                    raise _fail(spec, v, "is not JSON") from None
            return v  # MySQL: the binary JSON, already decoded

        return conv_json

    def conv_bytes(v: Any) -> Any:  # binary char / blob, bit, geometry, vector
        if isinstance(v, bytes):
            return v
        if isinstance(v, str):  # decoded as UTF-8 without charset metadata: encoding gives the bytes back
            return v.encode("utf-8")
        raise _fail(spec, v, "is not binary")

    return conv_bytes


def _fits_decimal(v: Decimal, scale: int, limit: int) -> bool:
    """Whether ``v`` at ``scale`` is an integer below ``limit`` in magnitude (exact integer arithmetic)."""
    if not v.is_finite():
        return False
    _sign, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)))
    shift = exponent + scale
    if shift >= 0:
        if unscaled and len(digits) + shift > len(str(limit)):  # too many digits (and no huge power built)
            return False
        power: int = 10**shift  # an int: shift >= 0 (the checker types int ** int as Any)
        return unscaled * power < limit
    divisor: int = 10**-shift
    whole, rest = divmod(unscaled, divisor)
    return rest == 0 and whole < limit


def cell_converter(spec: ColumnSpec, column_type: pa.DataType | str) -> Callable[[Any], Any]:
    """Decoded non-null value → the cell of a union column of ``column_type`` (ValueMismatch if it cannot).

    Cells are what ``pa.array(rows, struct_type)`` takes: a variant cell is a ``{"value", "metadata"}`` dict."""
    base = _base_converter(spec)
    own = arrow_type(spec)
    if isinstance(column_type, str):  # a variant cell: its two encoded parts, as the Arrow struct holds them
        def to_variant(v: Any) -> dict[str, bytes]:
            value, metadata = encode_variant(base(v))
            return {"value": value, "metadata": metadata}

        return to_variant
    if isinstance(own, str) or own == column_type:
        return base
    if pa.types.is_decimal(column_type):
        return lambda v: Decimal(base(v))
    return base  # a wider integer or float64: the same Python value


# -- TABLE_MAP ↔ specs -------------------------------------------------------------------------------------------
def _charset_name(collation_id: int | None) -> str | None:
    if collation_id is None:
        return None
    if collation_id == ct.BINARY_COLLATION:
        return "binary"
    return ct.charset_of_collation(collation_id)


def spec_from_table_map(col: ColumnInfo) -> ColumnSpec:
    """A column as a TABLE_MAP with ``binlog_row_metadata=FULL`` describes it (``name`` must be known)."""
    if col.name is None:
        raise ValueMismatch(f"column #{col.index + 1} has no name in the TABLE_MAP (the server wrote it with "
                            "binlog_row_metadata other than FULL; use schemaFrom=binlog or ddl:<path>)")
    t = col.real_type
    meta = col.meta if isinstance(col.meta, int) else 0
    charset = _charset_name(col.charset)
    common: dict[str, Any] = {"name": col.name, "nullable": col.nullable}
    if t in _INT_BYTES:
        return ColumnSpec(kind="int", size=_INT_BYTES[t], unsigned=bool(col.unsigned), **common)
    if t == ct.FLOAT:
        return ColumnSpec(kind="float", **common)
    if t == ct.DOUBLE:
        return ColumnSpec(kind="double", **common)
    if t == ct.NEWDECIMAL:
        return ColumnSpec(kind="decimal", precision=meta >> 8, scale=meta & 0xFF, **common)
    for kind in ("date", "datetime", "timestamp", "time", "year", "enum", "set", "bit", "geometry", "vector"):
        if t in _BINLOG_TYPES[kind]:
            size = (meta >> 8) * 8 + (meta & 0xFF) if kind == "bit" else 0
            values = col.enum_values if kind == "enum" else col.set_values if kind == "set" else None
            return ColumnSpec(kind=kind, size=size, values=values, charset=charset, **common)
    if t == ct.JSON:
        return ColumnSpec(kind="json", **common)
    if t in _BINLOG_TYPES["char"] or t in _BINLOG_TYPES["blob"]:
        kind = "char" if t in _BINLOG_TYPES["char"] else "blob"
        return ColumnSpec(kind=kind, binary=charset == "binary", charset=charset, **common)
    raise ValueMismatch(f"column {col.name!r}: binlog type {ct.TYPE_NAMES.get(t, t)} has no typed column")


def compatible_binlog_type(spec: ColumnSpec, col: ColumnInfo) -> bool:
    """Whether a TABLE_MAP column can be a column declared as ``spec`` (a missed DDL shows up here)."""
    if spec.kind == "int":
        return col.real_type == _INT_TYPES.get(spec.size)
    return col.real_type in _BINLOG_TYPES.get(spec.kind, frozenset())


def enrich_table_map(table_map: TableMap, layout: Layout) -> TableMap:
    """``table_map`` with what the declared layout knows and the TABLE_MAP does not say (names, signedness,
    character sets, ENUM / SET names), so that :mod:`.rows` decodes each value by its declared type."""
    columns = []
    for col, spec in zip(table_map.columns, layout.columns, strict=True):
        charset = col.charset
        if charset is None and spec.kind in ("char", "blob", "json", "enum", "set"):
            name = "binary" if spec.binary else (spec.charset or layout.default_charset)
            charset = ct.collation_for_charset(name) if name else None
        columns.append(replace(
            col, name=col.name if col.name is not None else spec.name,
            unsigned=col.unsigned if col.unsigned is not None else spec.unsigned, charset=charset,
            enum_values=col.enum_values if col.enum_values is not None or spec.kind != "enum" else spec.values,
            set_values=col.set_values if col.set_values is not None or spec.kind != "set" else spec.values))
    return TableMap(table_id=table_map.table_id, flags=table_map.flags, database=table_map.database,
                    table=table_map.table, columns=tuple(columns), primary_key=table_map.primary_key)
