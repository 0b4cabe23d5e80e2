"""Expected typed columns for the Tarantool typed views, from what Tarantool itself returned (select, xlog.pairs).

Independent of the reader's own conversion code: each rule below restates ``docs/formats/tarantool-typed.md``.
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

from spark_logsource.arrow.variant import decode_variant

_VARIANT_TYPES = frozenset({"any", "scalar", "map", "array", "interval"})
_INT64 = (-(1 << 63), (1 << 63) - 1)
_DOUBLE_MANTISSA_BITS = 53


def fits(value: Any, field_type: str) -> bool:
    """Whether Tarantool's ``value`` of a ``field_type`` field has a typed cell (the doc's "does not fit" rules).

    Exact arithmetic only (integers and fractions), so the rule is restated without the reader's conversions:
    an integer in a double column must be a double exactly, a decimal in decimal(38,18) must be a whole number of
    10^-18 below 10^20 in magnitude.
    """
    if value is None or field_type in _VARIANT_TYPES:
        return True
    if field_type in ("unsigned", "integer"):
        return type(value) is int and _INT64[0] <= value <= _INT64[1]
    if field_type in ("number", "double"):
        if isinstance(value, float):
            return True
        if type(value) is not int:
            return False
        magnitude = abs(value)
        odd = magnitude >> ((magnitude & -magnitude).bit_length() - 1) if magnitude else 0
        return odd.bit_length() <= _DOUBLE_MANTISSA_BITS  # an odd mantissa of at most 53 bits times 2^k
    if field_type == "decimal":
        if not isinstance(value, Decimal) or not value.is_finite():
            return False
        exact = Fraction(value)
        return (exact * 10**18).denominator == 1 and abs(exact) < 10**20
    return True


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """An Arrow row (``to_pylist``) with its variant cells decoded."""
    out = {}
    for name, value in row.items():
        if isinstance(value, dict) and set(value) == {"value", "metadata"}:
            value = decode_variant(value["value"], value["metadata"])
        out[name] = value
    return out


def same_cell(ours: Any, tarantool: Any, field_type: str) -> bool:
    """Whether our cell holds Tarantool's value of a field of ``field_type``."""
    if tarantool is None:
        return ours is None
    if field_type in ("unsigned", "integer"):
        return type(ours) is int and ours == tarantool
    if field_type in ("number", "double"):
        if not isinstance(ours, float):
            return False
        if isinstance(tarantool, float) and not math.isfinite(tarantool):
            return math.isnan(ours) if math.isnan(tarantool) else ours == tarantool
        if not math.isfinite(ours):
            return False
        # the same value, and the same sign for a zero (-0.0 == 0.0 in Python)
        return Fraction(ours) == Fraction(tarantool) and math.copysign(1.0, ours) == math.copysign(1.0, tarantool)
    if field_type == "decimal":
        return isinstance(ours, Decimal) and ours == tarantool
    if field_type == "uuid":
        return isinstance(tarantool, uuid.UUID) and ours == str(tarantool)
    if field_type == "varbinary":
        return ours == tarantool and isinstance(ours, bytes)
    if field_type in _VARIANT_TYPES:
        return _same_plain(ours, tarantool)
    return type(ours) is type(tarantool) and ours == tarantool


def _same_plain(a: Any, b: Any) -> bool:
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(_same_plain(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, dict):
        return isinstance(a, dict) and set(a) == {str(k) for k in b} and all(_same_plain(a[str(k)], v)
                                                                            for k, v in b.items())
    if isinstance(b, uuid.UUID):
        return a == str(b)
    if isinstance(b, bool) or isinstance(a, bool):
        return a is b
    return a == b


def row_mismatches(ours: dict[str, Any], tup: list[Any], fmt: list[dict[str, Any]]) -> list[str]:
    """How our typed row differs from tuple ``tup`` of a space with format ``fmt`` (names and types)."""
    problems = []
    for i, field in enumerate(fmt):
        value = tup[i] if i < len(tup) else None
        if field["name"] not in ours:
            problems.append(f"no column {field['name']}")
        elif not same_cell(ours[field["name"]], value, field["type"]):
            problems.append(f"{field['name']}: ours {ours[field['name']]!r}, tarantool {value!r}")
    rest = tup[len(fmt):]
    if not _same_plain(ours.get("extra_fields"), rest or None):
        problems.append(f"extra_fields: ours {ours.get('extra_fields')!r}, tarantool {rest!r}")
    return problems
