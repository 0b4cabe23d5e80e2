"""Expected typed columns for the Tarantool typed views, from what Tarantool itself returned (select, xlog.pairs).

Independent of the reader's own conversion code: each rule below restates ``docs/formats/tarantool-typed.md``.
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import Any

from spark_logsource.variant import decode_variant

_VARIANT_TYPES = frozenset({"any", "scalar", "map", "array", "interval"})


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
        return isinstance(ours, float) and (ours == float(tarantool) or (math.isnan(ours) and math.isnan(tarantool)))
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
