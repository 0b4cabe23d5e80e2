"""JSON text of decoded values: checked with the standard library's json parser and encoder (independent of
ours), and against the variant encoding's key conversion."""

from __future__ import annotations

import base64
import datetime
import json
import math
import sys
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_logsource.arrow.jsontext import JsonEncodeError, int_text, key_text, to_json
from spark_logsource.arrow.variant import decode_variant, encode_variant
from spark_logsource.errors import LogSourceError

plain_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(plain_json)
def test_same_text_as_stdlib_compact_json(value: Any) -> None:
    """For data JSON already has, our text is the standard library's compact, non-ASCII-keeping text."""
    assert to_json(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(plain_json)
def test_round_trips_through_json_loads(value: Any) -> None:
    assert json.loads(to_json(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_is_shortest_repr_and_exact(number: float) -> None:
    text = to_json(number)
    assert text == repr(number)
    assert float(text) == number
    assert math.copysign(1, json.loads(text)) == math.copysign(1, number)


@pytest.mark.parametrize(
    ("number", "text"), [(math.nan, '"NaN"'), (math.inf, '"Infinity"'), (-math.inf, '"-Infinity"')]
)
def test_non_finite_floats_are_strings(number: float, text: str) -> None:
    assert to_json(number) == text
    assert to_json([number]) == f"[{text}]"


@pytest.mark.parametrize("number", [0, -1, 2**63, -(2**64), 10**40, 3**20000], ids=lambda n: f"{n.bit_length()}bits")
def test_int_exact_any_size(number: int) -> None:
    text = to_json(number)
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert text == str(number)
    finally:
        sys.set_int_max_str_digits(limit)


def test_int_text_of_huge_negative() -> None:
    number = -(7**30000)
    text = int_text(number)
    assert text.startswith("-")
    assert int(text[1:60]) == (-number) // 10 ** (len(text) - 60)
    assert int(text[-60:]) == (-number) % 10**60


@pytest.mark.parametrize(
    "text",
    [
        "1.50",
        "-0.00",
        "0",
        "1E+3",
        "123456789012345678901234567890.123456789012345678901234567890",
        "1E-7",
        "-12345678901234.5678",
        "1.000000000000000000000000000000000000000001",
    ],
)
def test_decimal_digits_preserved_exactly(text: str) -> None:
    number = Decimal(text)
    rendered = to_json(number)
    assert rendered == str(number)
    parsed = json.loads(rendered, parse_float=Decimal, parse_int=Decimal)
    assert parsed.as_tuple() == number.as_tuple()
    assert json.loads(to_json({"d": number}), parse_float=Decimal)["d"] == number


@pytest.mark.parametrize("number", [Decimal("NaN"), Decimal("-Infinity"), Decimal("sNaN")])
def test_non_finite_decimal_is_string(number: Decimal) -> None:
    assert json.loads(to_json(number)) == str(number)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_strings_round_trip_and_keep_non_ascii(text: str) -> None:
    rendered = to_json(text)
    assert json.loads(rendered) == text
    rendered.encode("utf-8")  # always valid UTF-8
    for char in text:
        if ord(char) >= 0x80:
            assert char in rendered


def test_control_characters_escaped_and_del_kept() -> None:
    assert to_json('a"b\\c\n\t\x00\x1f\x7fé') == '"a\\"b\\\\c\\n\\t\\u0000\\u001f\x7fé"'


def test_lone_surrogate_is_escaped() -> None:
    text = b"ab\xff".decode("utf-8", "surrogateescape")
    rendered = to_json(text)
    assert rendered == '"ab\\udcff"'
    assert json.loads(rendered) == text
    rendered.encode("utf-8")


@pytest.mark.parametrize("blob", [b"", b"\x00\xff\x10", bytearray(b"hello"), memoryview(b"abcd")])
def test_binary_is_base64(blob: bytes | bytearray | memoryview) -> None:
    assert base64.b64decode(json.loads(to_json(blob)), validate=True) == bytes(blob)


def test_uuid() -> None:
    ident = uuid.UUID("12345678-9ABC-DEF0-1234-56789ABCDEF0")
    assert json.loads(to_json(ident)) == "12345678-9abc-def0-1234-56789abcdef0"


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC), "2024-01-02T03:04:05.123456Z"),
        (
            datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
            "2024-01-02T08:04:05.000006Z",
        ),
        (datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05.000000"),
        (datetime.datetime(5, 1, 2), "0005-01-02T00:00:00.000000"),
    ],
)
def test_datetime_iso(moment: datetime.datetime, text: str) -> None:
    assert to_json(moment) == f'"{text}"'
    parsed = datetime.datetime.fromisoformat(json.loads(to_json(moment)))
    assert parsed == moment


def test_date_time_timedelta() -> None:
    assert to_json(datetime.date(2024, 2, 29)) == '"2024-02-29"'
    assert to_json(datetime.date(33, 2, 1)) == '"0033-02-01"'
    assert to_json(datetime.time(1, 2, 3, 4)) == '"01:02:03.000004"'
    assert to_json(datetime.timedelta(days=1, seconds=3723)) == '"1 day, 1:02:03"'


def test_tuple_is_array_and_dict_order_kept() -> None:
    assert to_json((1, ("a", None), {"z": 1, "a": 2})) == '[1,["a",null],{"z":1,"a":2}]'


def test_non_string_keys_and_last_wins() -> None:
    value = {1: "a", "1": "b", None: "n", False: "f", 2.5: "x", b"\x00": "bin", (1, "k"): "t"}
    assert to_json(value) == '{"1":"b","null":"n","false":"f","2.5":"x","AA==":"bin","[1,\\"k\\"]":"t"}'


mixed_keys = st.one_of(
    st.text(max_size=6),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.floats(),
    st.binary(max_size=4),
    st.tuples(st.integers(0, 3), st.text(max_size=2)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(mixed_keys, st.integers(-(2**63), 2**63 - 1)), max_size=10))
def test_key_conversion_matches_variant(pairs: list[tuple[Any, int]]) -> None:
    """The JSON object and the variant object of the same dict have the same keys and the same winners."""
    source: dict[Any, int] = {}
    for key, item in pairs:
        source[key] = item
    expected: dict[str, int] = {}
    for key, item in source.items():
        expected[key_text(key)] = item
    assert json.loads(to_json(source)) == expected
    assert decode_variant(*encode_variant(source)) == expected


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("a", "a"),
        (1, "1"),
        (-7, "-7"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (1.5, "1.5"),
        (math.nan, "NaN"),
        (-math.inf, "-Infinity"),
        (b"\x00", "AA=="),
        ((1, "x"), '[1,"x"]'),
        (Decimal("1.50"), "1.50"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (datetime.date(2024, 1, 2), "2024-01-02"),
    ],
)
def test_key_text(key: Any, text: str) -> None:
    assert key_text(key) == text


@pytest.mark.parametrize("thing", [object(), {1}, 1j])
def test_unsupported_type(thing: Any) -> None:
    with pytest.raises(JsonEncodeError, match=type(thing).__name__) as info:
        to_json({"k": [thing]})
    assert isinstance(info.value, LogSourceError)


def test_deep_nesting_is_an_error() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(JsonEncodeError, match="deeply"):
        to_json(deep)
