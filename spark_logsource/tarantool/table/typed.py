"""Tarantool field types → Arrow columns, and the typed columns of one space (``docs/formats/tarantool-typed.md``).

| field type | column | a value that does not fit |
|---|---|---|
| unsigned, integer | long | outside the signed 64-bit range |
| number, double | double | not a number, a decimal, or an integer no double equals (beyond 2^53, low bits set) |
| string | string | not a string |
| boolean | boolean | not a boolean |
| varbinary | binary | not binary (a string is taken as its UTF-8 bytes) |
| decimal | decimal(38, 18) | not a decimal, or not exact in 20 integer and 18 fractional digits |
| uuid | string (canonical text) | not a uuid |
| datetime | timestamp | not a datetime |
| any, scalar, map, array, interval, ... | variant | (every value fits) |

A value that does not fit is never guessed: the row becomes a corrupt-record row naming the field.  A name
used by several formats of the space with different column types becomes a variant column.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from spark_logsource.arrow.columns import variant_array, variant_field
from spark_logsource.tarantool.decode.rows import variant_of
from spark_logsource.tarantool.table.catalog import FieldDef, SpaceDef

__all__ = ["VARIANT", "FieldTypeError", "arrow_type", "column_fields", "convert", "row_fields", "row_plan",
           "union_columns", "view_schema"]

DECIMAL_TYPE = pa.decimal128(38, 18)
_DECIMAL_SCALE = 18
_DECIMAL_DIGITS = 38
#: Bound of the unscaled integer of a decimal(38,18) cell (38 digits).
_DECIMAL_UNSCALED_LIMIT = 10**_DECIMAL_DIGITS
_I64 = (-(1 << 63), (1 << 63) - 1)
_DOUBLE_MANTISSA_BITS = 53
#: Marker type of a variant column.
VARIANT = "variant"

_TYPES: dict[str, pa.DataType] = {
    "unsigned": pa.int64(), "integer": pa.int64(), "number": pa.float64(), "double": pa.float64(),
    "string": pa.string(), "boolean": pa.bool_(), "varbinary": pa.binary(), "decimal": DECIMAL_TYPE,
    "uuid": pa.string(), "datetime": pa.timestamp("us", tz="UTC"),
}


class FieldTypeError(ValueError):
    """A value that its declared field type cannot hold (message names the field)."""


def arrow_type(field_type: str) -> pa.DataType | str:
    """The Arrow type of a field type, or :data:`VARIANT`."""
    return _TYPES.get(field_type, VARIANT)


def union_columns(spaces: Sequence[SpaceDef], reserved: Sequence[str] = ()) -> list[tuple[str, pa.DataType | str]]:
    """Every field name of every definition in first-seen order with its column type (conflicts → variant).

    A field whose name is one of ``reserved`` (the view's own columns) is renamed with a trailing ``_``.
    """
    out: dict[str, pa.DataType | str] = {}
    for space in spaces:
        for f in space.fields:
            name = column_name(f.name, reserved)
            t = arrow_type(f.type)
            if name in out and str(out[name]) != str(t):
                out[name] = VARIANT
            else:
                out.setdefault(name, t)
    return list(out.items())


def column_name(field_name: str, reserved: Sequence[str]) -> str:
    while field_name in reserved:
        field_name += "_"
    return field_name


def column_fields(columns: Sequence[tuple[str, pa.DataType | str]]) -> list[pa.Field]:
    return [variant_field(n) if isinstance(t, str) else pa.field(n, t) for n, t in columns]


def view_schema(spaces: Sequence[SpaceDef], reserved: Sequence[str], *, head: Sequence[pa.Field] = (),
                tail: Sequence[str] = (), corrupt_column: str | None = None,
                ) -> tuple[dict[str, pa.DataType | str], pa.Schema]:
    """The typed columns of ``spaces`` (:func:`union_columns`) and a typed view's schema: its own ``head`` fields,
    the typed columns, its variant ``tail`` columns, then the corrupt-record column when there is one."""
    columns = dict(union_columns(spaces, reserved))
    fields = [*head, *column_fields(list(columns.items())), *column_fields([(n, VARIANT) for n in tail])]
    if corrupt_column is not None:
        fields.append(pa.field(corrupt_column, pa.string()))
    return columns, pa.schema(fields)


def _to_int(value: Any) -> int:
    if type(value) is not int:
        raise FieldTypeError("not an integer")
    if not _I64[0] <= value <= _I64[1]:
        raise FieldTypeError(f"{value} is outside the 64-bit signed range of the column")
    return value


def _to_double(value: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is not int:
        if isinstance(value, Decimal):
            raise FieldTypeError(f"{value} is a decimal, which a double column does not take")
        raise FieldTypeError("not a number")
    # float() rounds an integer beyond 2^53 to a neighbour: only integers a double holds exactly are converted
    magnitude = abs(value)
    if magnitude >> _DOUBLE_MANTISSA_BITS and (magnitude >> ((magnitude & -magnitude).bit_length() - 1)
                                               ).bit_length() > _DOUBLE_MANTISSA_BITS:
        raise FieldTypeError(f"{value} has no exact double")
    return float(value)


def _to_string(value: Any) -> str:
    if type(value) is not str:
        raise FieldTypeError("not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise FieldTypeError("string is not valid UTF-8") from None
    return value


def _to_boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise FieldTypeError("not a boolean")
    return value


def _to_binary(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if not isinstance(value, bytes):
        raise FieldTypeError("not binary")
    return value


def decimal_cell(value: Decimal) -> Decimal | None:
    """``value`` at scale 18 when decimal(38,18) holds it exactly, else None.

    Integer arithmetic on the digits and exponent only: Decimal arithmetic (``quantize``, ``abs``, ``scaleb``)
    rounds to the thread's context, 28 digits by default, which a 38-digit value exceeds.  Trailing zeros beyond
    scale 18 are dropped (``0.1000000000000000000000`` fits), a positive exponent is expanded (``1E+5``), and the
    sign of a zero is not kept (Arrow's decimal has no -0).
    """
    if not value.is_finite():
        return None
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    coefficient = int("".join(map(str, digits)))
    if coefficient == 0:
        return Decimal((0, (0,), -_DECIMAL_SCALE))
    shift = exponent + _DECIMAL_SCALE
    if shift >= 0:
        if len(digits) + shift > _DECIMAL_DIGITS:  # decided before 10**shift is built (an exponent may be huge)
            return None
        unscaled = coefficient * 10**shift
    else:
        if -shift > len(digits):  # fewer digits than the fraction digits to drop: some are non-zero
            return None
        unscaled, rest = divmod(coefficient, 10**-shift)
        if rest:
            return None
    if unscaled >= _DECIMAL_UNSCALED_LIMIT:
        return None
    return Decimal((sign, tuple(map(int, str(unscaled))), -_DECIMAL_SCALE))


def _to_decimal(value: Any) -> Decimal:
    if not isinstance(value, Decimal):
        raise FieldTypeError("not a decimal")
    cell = decimal_cell(value)
    if cell is None:
        raise FieldTypeError(f"{value} does not fit decimal(38,18) exactly")
    return cell


def _to_uuid(value: Any) -> str:
    if not isinstance(value, uuid.UUID):
        raise FieldTypeError("not a uuid")
    return str(value)


def _to_datetime(value: Any) -> datetime.datetime:
    if not isinstance(value, datetime.datetime):
        raise FieldTypeError("not a datetime in the timestamp range")
    return value


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "unsigned": _to_int, "integer": _to_int, "number": _to_double, "double": _to_double, "string": _to_string,
    "boolean": _to_boolean, "varbinary": _to_binary, "decimal": _to_decimal, "uuid": _to_uuid,
    "datetime": _to_datetime,
}


def converter(field: FieldDef, column_type: pa.DataType | str) -> Callable[[Any], Any] | None:
    """The function checking and converting a non-null value of ``field`` (None: kept as is, for variants)."""
    if isinstance(column_type, str):  # VARIANT (compared by type: a pickled copy is another str object)
        return None
    return _CONVERTERS[field.type]


def convert(value: Any, field: FieldDef, column_type: pa.DataType | str) -> Any:
    """``value`` as the Python value of a ``column_type`` cell, checked against ``field.type``."""
    if value is None:
        return None
    conv = converter(field, column_type)
    return value if conv is None else conv(value)


def variant_column(values: Sequence[Any], present: Sequence[bool] | None = None) -> pa.Array:
    """A variant column; ``present[i]`` false (or a None value when ``present`` is None) = SQL NULL."""
    encoded: list[bytes | None] = []
    metas: list[bytes] = []
    for i, v in enumerate(values):
        if (present is not None and not present[i]) or (present is None and v is None):
            encoded.append(None)
            metas.append(b"")
            continue
        value, meta = variant_of(v)
        encoded.append(value)
        metas.append(meta)
    return variant_array(encoded, metas)


def typed_array(values: Sequence[Any], column_type: pa.DataType | str) -> pa.Array:
    if isinstance(column_type, str):
        return variant_column(values)
    return pa.array(values, column_type)


#: One field of a row plan: (field index, column name, converter or None, field for messages).
PlanItem = tuple[int, str, Callable[[Any], Any] | None, FieldDef]


def row_plan(space: SpaceDef, columns: dict[str, pa.DataType | str], reserved: Sequence[str]) -> list[PlanItem]:
    """How to turn a tuple of ``space`` into cells: computed once per definition, used for every row."""
    plan = []
    for i, f in enumerate(space.fields):
        name = column_name(f.name, reserved)
        plan.append((i, name, converter(f, columns[name]), f))
    return plan


def row_fields(tup: Sequence[Any], space: SpaceDef, columns: dict[str, pa.DataType | str],
               reserved: Sequence[str], plan: list[PlanItem] | None = None) -> tuple[dict[str, Any], list[Any] | None]:
    """A whole tuple → (column name → cell value, the fields beyond the format or None); FieldTypeError."""
    if plan is None:
        plan = row_plan(space, columns, reserved)
    out: dict[str, Any] = {}
    n = len(tup)
    for i, name, conv, f in plan:
        if i >= n:
            break
        value = tup[i]
        if value is None or conv is None:
            out[name] = value
            continue
        try:
            out[name] = conv(value)
        except FieldTypeError as exc:
            raise FieldTypeError(f"field {i + 1} {f.name!r} ({f.type}): {exc}") from None
    rest = list(tup[len(plan):]) if n > len(plan) else None
    return out, rest
