"""Compact JSON text for the Python values our decoders produce.

The decoders of this package yield plain Python values (decoded msgpack from Tarantool, decoded MySQL
column values).  ``to_json`` renders such a value as compact JSON text (RFC 8259, no insignificant
whitespace); ``key_text`` is the one rule that turns a map key into a string, shared with
:mod:`spark_logsource.arrow.variant` so that a value's JSON text and its variant encoding name the same keys.

Rendering rules (canonical; another implementation must produce the same characters):

- ``None`` → ``null``; ``True``/``False`` → ``true``/``false``.
- ``int`` (and int subclasses other than bool) → its exact decimal digits, any size.
- ``float`` → Python's shortest round-tripping ``repr`` (``1.5``, ``1e+16``, ``1e-05``, ``-0.0``); NaN and
  infinities, which JSON cannot express as numbers, → the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
- ``decimal.Decimal`` → a JSON number literal with the digits and exponent exactly as written, i.e.
  ``str(value)`` (``Decimal('1.50')`` → ``1.50``, ``Decimal('1E+3')`` → ``1E+3``; never via float).
  Non-finite decimals → the JSON string ``str(value)`` (``"NaN"``, ``"-Infinity"``, ``"sNaN"``).
- ``str`` → a JSON string; ``"`` ``\\`` and control characters U+0000–U+001F are escaped (``\\n``, ``\\u001f``,
  ...), every other character is kept as is (non-ASCII stays UTF-8 once the text is encoded).  A lone
  surrogate (from ``errors="surrogateescape"`` decoding) cannot be UTF-8, so it is written as its
  ``\\udcXX`` escape — valid JSON that ``json.loads`` turns back into the same Python string.
- ``bytes``/``bytearray``/``memoryview`` → a JSON string of their standard base64 (RFC 4648 §4, with ``=``
  padding).
- ``uuid.UUID`` → a JSON string of the canonical lowercase 8-4-4-4-12 form.
- ``datetime.datetime`` aware (``utcoffset()`` is not None) → converted to UTC,
  ``"YYYY-MM-DDTHH:MM:SS.ffffffZ"``; naive → the same without ``Z``.  The fraction always has 6 digits.
- ``datetime.date`` → ``"YYYY-MM-DD"``; ``datetime.time`` and ``datetime.timedelta`` → ``str(value)``
  (``"03:04:05.000006"``, ``"1 day, 2:03:04"``) — JSON has no type for them.
- ``list``/``tuple`` → array.
- ``dict`` → object.  Keys go through :func:`key_text`; the members are written in the dict's order.  When
  two keys give the same text (``{1: "a", "1": "b"}``) the LAST value wins, written at the place of the first
  key — the same outcome as building a new dict from the converted keys.
- Any other type → :class:`JsonEncodeError`.

Key rule (:func:`key_text`): a key becomes the text its value has under the rules above, with the quotes
(and escapes) of a JSON string removed.  So ``"a"`` → ``a``, ``1`` → ``1``, ``True`` → ``true``,
``None`` → ``null``, ``1.5`` → ``1.5``, ``float("nan")`` → ``NaN``, ``b"\\x00"`` → ``AA==``,
``(1, "x")`` → ``[1,"x"]``, a datetime → its ISO text.
"""

from __future__ import annotations

import base64
import datetime
import json.encoder
import math
import sys
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from spark_logsource.errors import LogSourceError

__all__ = ["JsonEncodeError", "int_text", "key_text", "to_json"]

_quote: Callable[[str], str] = json.encoder.encode_basestring  # the C version when available

_UTC = datetime.UTC
_int_repr = int.__repr__
_float_repr = float.__repr__
_INF = math.inf


class JsonEncodeError(LogSourceError, TypeError):
    """A value (or a map key) has a type that has no JSON rendering."""


def int_text(value: int) -> str:
    """Exact decimal digits of ``value`` at any size (``int.__repr__`` refuses more than 4300 digits)."""
    try:
        return _int_repr(value)
    except ValueError:  # sys.get_int_max_str_digits() limit: split into halves, which stay exact
        return _big_int_text(int(value))


def _big_int_text(value: int) -> str:
    if value < 0:
        return "-" + _big_int_text(-value)
    limit = max(sys.get_int_max_str_digits(), 640)
    digits = int(value.bit_length() * 0.30103) + 1
    if digits < limit:
        return _int_repr(value)
    half = digits // 2
    high, low = divmod(value, 10**half)
    return _big_int_text(high) + _big_int_text(low).rjust(half, "0")


def _string(value: str) -> str:
    """JSON string literal; non-ASCII kept, lone surrogates escaped."""
    if value.isascii():
        return _quote(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _string_with_surrogates(value)
    return _quote(value)


def _string_with_surrogates(value: str) -> str:
    out = []
    for char in _quote(value):
        out.append(f"\\u{ord(char):04x}" if "\ud800" <= char <= "\udfff" else char)
    return "".join(out)


def _float(value: float) -> str:
    if value - value == 0.0:  # finite
        return _float_repr(value)
    if value != value:
        return '"NaN"'
    return '"Infinity"' if value > 0 else '"-Infinity"'


def _decimal(value: Decimal) -> str:
    if value.is_finite():
        return str(value)
    return '"' + str(value) + '"'


def _binary(value: bytes | bytearray | memoryview) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'


def datetime_text(value: datetime.datetime) -> str:
    """ISO 8601 text of a datetime: aware → UTC with ``Z``, naive → without; always 6 fraction digits."""
    if value.tzinfo is not None and value.utcoffset() is not None:
        try:
            value = value.astimezone(_UTC)
        except OverflowError as exc:
            raise JsonEncodeError(f"datetime {value!r} is outside the range of UTC datetimes") from exc
        suffix = "Z"
    else:
        suffix = ""
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:"
        f"{value.second:02d}.{value.microsecond:06d}{suffix}"
    )


def _datetime(value: datetime.datetime) -> str:
    return '"' + datetime_text(value) + '"'


def _date(value: datetime.date) -> str:
    return f'"{value.year:04d}-{value.month:02d}-{value.day:02d}"'


def _as_str(value: object) -> str:
    return _string(str(value))


def _list(value: list[Any] | tuple[Any, ...]) -> str:
    return "[" + ",".join([_text(item) for item in value]) + "]"


def _object(value: dict[Any, Any]) -> str:
    members: list[str] = []
    append = members.append
    for key, item in value.items():
        if type(key) is not str:
            return _object_converted_keys(value)
        append(_string(key) + ":" + _text(item))
    return "{" + ",".join(members) + "}"


def _object_converted_keys(value: dict[Any, Any]) -> str:
    converted: dict[str, Any] = {}
    for key, item in value.items():
        converted[key_text(key)] = item
    return "{" + ",".join([_string(key) + ":" + _text(item) for key, item in converted.items()]) + "}"


_BY_TYPE: dict[type, Callable[[Any], str]] = {
    str: _string,
    int: int_text,
    float: _float,
    list: _list,
    tuple: _list,
    dict: _object,
    Decimal: _decimal,
    bytes: _binary,
    bytearray: _binary,
    memoryview: _binary,
    uuid.UUID: _as_str,
    datetime.datetime: _datetime,
    datetime.date: _date,
    datetime.time: _as_str,
    datetime.timedelta: _as_str,
}

# Subclasses are matched in this order (bool before int, datetime before date).
_BY_BASE: tuple[tuple[type, Callable[[Any], str]], ...] = (
    (bool, lambda value: "true" if value else "false"),
    (str, lambda value: _string(str.__str__(value))),
    (int, lambda value: int_text(int(value))),
    (float, lambda value: _float(float(value))),
    (dict, _object),
    (list, _list),
    (tuple, _list),
    (Decimal, _decimal),
    (bytes, _binary),
    (bytearray, _binary),
    (memoryview, _binary),
    (uuid.UUID, _as_str),
    (datetime.datetime, _datetime),
    (datetime.date, _date),
    (datetime.time, _as_str),
    (datetime.timedelta, _as_str),
)


def _text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _quote(value) if value.isascii() else _string(value)
    if kind is int:
        return _int_repr(value) if -(10**18) < value < 10**18 else int_text(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    render = _BY_TYPE.get(kind)
    if render is not None:
        return render(value)
    for base, render in _BY_BASE:
        if isinstance(value, base):
            return render(value)
    raise JsonEncodeError(f"cannot render a value of type {kind.__module__}.{kind.__qualname__} as JSON")


def to_json(value: Any) -> str:
    """Compact JSON text of ``value`` (rules in the module docstring)."""
    try:
        return _text(value)
    except RecursionError as exc:
        raise JsonEncodeError("value is nested too deeply to render as JSON") from exc


def key_text(key: Any) -> str:
    """The string a map key becomes in JSON objects and variant objects.

    The key's JSON text, with the quotes of a JSON string taken off: ``"a"`` → ``a``, ``1`` → ``1``,
    ``True`` → ``true``, ``None`` → ``null``, ``b"\\x00"`` → ``AA==``, ``(1, "x")`` → ``[1,"x"]``.
    """
    if type(key) is str:  # tested on the value itself, so that the type checker narrows ``key`` to str
        return key
    kind = type(key)
    if kind is int:
        return int_text(key)
    if key is None:
        return "null"
    if kind is bool:
        return "true" if key else "false"
    if kind is float:
        if key - key == 0.0:
            return _float_repr(key)
        return "NaN" if key != key else ("Infinity" if key > 0 else "-Infinity")
    if kind is Decimal or kind is uuid.UUID or kind is datetime.time or kind is datetime.timedelta:
        return str(key)
    if kind is bytes:
        return base64.b64encode(key).decode("ascii")
    if kind is datetime.datetime:
        return datetime_text(key)
    if isinstance(key, str):
        return str.__str__(key)
    text = to_json(key)
    return json.loads(text) if text.startswith('"') else text
