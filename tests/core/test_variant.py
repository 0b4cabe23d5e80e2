"""Variant encoding: the canonical rules of spark_logsource.arrow.variant, checked with pyspark's own variant reader
(pyspark.sql.variant_utils.VariantUtils, an implementation independent of ours) and against the byte layout
of Spark's common/variant/README.md."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import math
import struct
import uuid
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.variant_utils import VariantUtils

from spark_logsource.arrow.variant import EMPTY_METADATA, VariantEncodeError, decode_variant, encode_variant
from spark_logsource.errors import CorruptDataError, LogSourceError

UTC = datetime.UTC
PLUS2 = datetime.timezone(datetime.timedelta(hours=2))


def pyspark_reads(value: bytes, metadata: bytes) -> Any:
    """pyspark's reader, run with a decimal context wide enough that its Decimal arithmetic is exact (it
    multiplies by 10**-scale in the current context, which rounds to 28 digits by default)."""
    with decimal.localcontext() as context:
        context.prec = 100
        return VariantUtils.to_python(value, metadata)


def spark_python(value: Any) -> Any:
    """Encode ``value`` with our encoder, decode it with pyspark's reader."""
    return pyspark_reads(*encode_variant(value))


def primitive_type(encoded: bytes) -> int:
    """The primitive type id of a primitive value (basic type 0), per the spec's value header."""
    assert encoded[0] & 0x3 == 0, f"not a primitive: header {encoded[0]:#x}"
    return encoded[0] >> 2


# ---- scalars: the type each rule picks, and the value pyspark reads back ----

INT_CASES = [
    (0, 3, 1),
    (127, 3, 1),
    (-128, 3, 1),
    (128, 4, 2),
    (-129, 4, 2),
    (32767, 4, 2),
    (32768, 5, 4),
    (-(2**31), 5, 4),
    (2**31, 6, 8),
    (2**63 - 1, 6, 8),
    (-(2**63), 6, 8),
]


@pytest.mark.parametrize(("number", "type_id", "width"), INT_CASES)
def test_int_uses_smallest_integer_type(number: int, type_id: int, width: int) -> None:
    value, metadata = encode_variant(number)
    assert metadata == EMPTY_METADATA
    assert primitive_type(value) == type_id
    assert len(value) == 1 + width
    assert pyspark_reads(value, metadata) == number
    assert decode_variant(value, metadata) == number


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 10**38 - 1, -(10**38) + 1, 2**100])
def test_int_beyond_int64_is_decimal16_scale_0(number: int) -> None:
    value, _ = encode_variant(number)
    assert primitive_type(value) == 10
    assert value[1] == 0  # scale
    assert spark_python(number) == Decimal(number)


@pytest.mark.parametrize("number", [10**38, -(10**38), 7**200])
def test_int_beyond_38_digits_is_string(number: int) -> None:
    assert spark_python(number) == str(number)


def test_huge_int_beyond_python_str_limit_is_exact_string() -> None:
    number = 3**20000  # 9543 digits: more than int.__str__ allows by default
    text = spark_python(number)
    assert isinstance(text, str)
    assert len(text) == 9543
    assert int(text[:50]) == number // 10 ** (9543 - 50)
    assert int(text[-50:]) == number % 10**50


@pytest.mark.parametrize(
    ("number", "type_id", "scale", "unscaled"),
    [
        (Decimal("1.50"), 8, 2, 150),
        (Decimal("-1.50"), 8, 2, -150),
        (Decimal("1E+3"), 8, 0, 1000),
        (Decimal("0.001"), 8, 3, 1),
        (Decimal("0E-9"), 8, 9, 0),
        (Decimal("0E-10"), 9, 10, 0),
        (Decimal("999999999"), 8, 0, 999999999),
        (Decimal("1234567890"), 9, 0, 1234567890),
        (Decimal("-12345678901234.5678"), 9, 4, -123456789012345678),
        (Decimal("1234567890123456789"), 10, 0, 1234567890123456789),
        (Decimal("1" * 38), 10, 0, int("1" * 38)),
        (Decimal("0." + "1" * 38), 10, 38, int("1" * 38)),
        (Decimal("1E+37"), 10, 0, 10**37),
        (Decimal("-0.0"), 8, 1, 0),
        (Decimal("0E+999999"), 8, 0, 0),
    ],
)
def test_decimal_keeps_digits_and_scale(number: Decimal, type_id: int, scale: int, unscaled: int) -> None:
    value, _ = encode_variant(number)
    assert primitive_type(value) == type_id
    assert value[1] == scale
    assert int.from_bytes(value[2:], "little", signed=True) == unscaled
    read_back = pyspark_reads(value, EMPTY_METADATA)
    assert read_back == number
    assert read_back.as_tuple().exponent == -scale


@pytest.mark.parametrize(
    "number",
    [
        Decimal("NaN"),
        Decimal("-Infinity"),
        Decimal("sNaN"),
        Decimal("1" * 39),
        Decimal("1E+38"),
        Decimal("1E-39"),
        Decimal("1E+999999"),
        Decimal("1E-999999"),
    ],
)
def test_decimal_without_spark_form_is_its_string(number: Decimal) -> None:
    assert spark_python(number) == str(number)


@pytest.mark.parametrize("number", [0.0, -0.0, 1.5, 1e300, 5e-324, math.inf, -math.inf, 1.0 / 3])
def test_float_is_always_double(number: float) -> None:
    value, _ = encode_variant(number)
    assert primitive_type(value) == 7
    assert struct.unpack("<d", value[1:])[0] == number
    assert math.copysign(1, spark_python(number)) == math.copysign(1, number)


def test_nan_is_double() -> None:
    value, _ = encode_variant(math.nan)
    assert primitive_type(value) == 7
    assert math.isnan(pyspark_reads(value, EMPTY_METADATA))


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("é" * 31, True),
        ("é" * 32, False),
        ("😀" * 16, False),
        ("x" * 100_000, False),
    ],
)
def test_string_short_below_64_utf8_bytes(text: str, short: bool) -> None:
    value, metadata = encode_variant(text)
    size = len(text.encode("utf-8"))
    if short:
        assert value[0] == (size << 2) | 1
    else:
        assert primitive_type(value) == 16
        assert int.from_bytes(value[1:5], "little") == size
    assert pyspark_reads(value, metadata) == text


def test_string_with_lone_surrogate_is_refused() -> None:
    bad = b"ab\xff".decode("utf-8", "surrogateescape")
    with pytest.raises(VariantEncodeError, match="not valid Unicode"):
        encode_variant(bad)
    with pytest.raises(VariantEncodeError):
        encode_variant({bad: 1})


@pytest.mark.parametrize("blob", [b"", b"\x00\xff", bytearray(b"abc"), memoryview(b"xyz"), bytes(range(256)) * 300])
def test_binary(blob: bytes | bytearray | memoryview) -> None:
    value, _ = encode_variant(blob)
    assert primitive_type(value) == 15
    assert spark_python(blob) == bytes(blob)


def test_uuid_is_canonical_lowercase_string() -> None:
    ident = uuid.UUID("12345678-9ABC-DEF0-1234-56789ABCDEF0")
    assert spark_python(ident) == "12345678-9abc-def0-1234-56789abcdef0"


@pytest.mark.parametrize(
    "moment",
    [
        datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=PLUS2),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime.datetime(1, 1, 1, tzinfo=UTC),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_aware_datetime_is_timestamp_utc_micros(moment: datetime.datetime) -> None:
    value, _ = encode_variant(moment)
    assert primitive_type(value) == 12
    micros = int.from_bytes(value[1:], "little", signed=True)
    assert datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=micros) == moment
    assert decode_variant(value, EMPTY_METADATA) == moment


@pytest.mark.parametrize(
    "moment",
    [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), datetime.datetime(1900, 3, 1), datetime.datetime(1, 1, 1)],
)
def test_naive_datetime_is_timestamp_ntz(moment: datetime.datetime) -> None:
    value, _ = encode_variant(moment)
    assert primitive_type(value) == 13
    assert spark_python(moment) == moment


@pytest.mark.parametrize("day", [datetime.date(1970, 1, 1), datetime.date(1969, 12, 31), datetime.date(2024, 2, 29)])
def test_date(day: datetime.date) -> None:
    value, _ = encode_variant(day)
    assert primitive_type(value) == 11
    assert int.from_bytes(value[1:], "little", signed=True) == (day - datetime.date(1970, 1, 1)).days
    assert spark_python(day) == day


@pytest.mark.parametrize(
    "thing", [datetime.time(1, 2, 3), datetime.time(1, 2, 3, 4, tzinfo=PLUS2), datetime.timedelta(days=-1, seconds=7)]
)
def test_time_and_timedelta_are_their_str(thing: datetime.time | datetime.timedelta) -> None:
    assert spark_python(thing) == str(thing)


@pytest.mark.parametrize(("constant", "header"), [(None, 0x00), (True, 0x04), (False, 0x08)])
def test_null_and_booleans(constant: bool | None, header: int) -> None:
    assert encode_variant(constant) == (bytes([header]), EMPTY_METADATA)
    assert spark_python(constant) is constant


def test_subclasses_encode_as_their_base() -> None:
    import enum

    class Colour(enum.IntEnum):
        RED = 300

    class Name(str):
        pass

    assert encode_variant(Colour.RED) == encode_variant(300)
    assert encode_variant(Name("bob")) == encode_variant("bob")
    assert encode_variant(OrderedDict([("b", 1), ("a", 2)])) == encode_variant({"a": 2, "b": 1})


@pytest.mark.parametrize("thing", [object(), {1, 2}, 1j, frozenset(), type])
def test_unsupported_type_names_it(thing: Any) -> None:
    with pytest.raises(VariantEncodeError, match=type(thing).__name__) as info:
        encode_variant([1, {"k": thing}])
    assert isinstance(info.value, LogSourceError)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(VariantEncodeError, match="deeply"):
        encode_variant(deep)


# ---- containers and metadata ----


def test_empty_metadata_is_exactly_01_00_00() -> None:
    assert EMPTY_METADATA == b"\x01\x00\x00"
    assert encode_variant([1, [2, "x"]])[1] == b"\x01\x00\x00"


def test_tarantool_like_tuple_layout() -> None:
    value, metadata = encode_variant([12345, "name12345", 24690, {"a": 12345}])
    # metadata: header 0x11 (version 1, sorted), size 1, offsets 0 1, "a"
    assert metadata == b"\x11\x01\x00\x01a"
    # array header 0x03, 4 elements, 5 one-byte offsets, then values: int16 (3 bytes), short string (10),
    # int16 (3), object (header, count, field id, 2 offsets, int16 = 8)
    assert value[:7] == bytes([0x03, 4, 0, 3, 13, 16, 24])
    assert value[7:] == bytes(
        [0x10, 0x39, 0x30, 0x25, *b"name12345", 0x10, 0x72, 0x60, 0x02, 1, 0, 0, 3, 0x10, 0x39, 0x30]
    )
    assert pyspark_reads(value, metadata) == [12345, "name12345", 24690, {"a": 12345}]


def test_dictionary_is_sorted_bytewise_and_shared_by_nested_objects() -> None:
    obj = {"zeta": 1, "é": {"b": 2, "Z": [{"a": 3, "zeta": 4}]}, "a": None, "\U0001f600": 5, "\ue000": 6}
    value, metadata = encode_variant(obj)
    assert metadata[0] == 0x11  # version 1, sorted_strings
    count = metadata[1]
    offsets = list(metadata[2 : 3 + count])
    blob = metadata[3 + count :]
    keys = [blob[offsets[i] : offsets[i + 1]] for i in range(count)]
    expected = sorted({key.encode("utf-8") for key in ["zeta", "é", "b", "Z", "a", "\U0001f600", "\ue000"]})
    assert keys == expected
    assert pyspark_reads(value, metadata) == obj


def test_object_fields_sorted_with_values_in_that_order() -> None:
    value, metadata = encode_variant({"b": 2, "c": 3, "a": 1})
    # header 0x02, 3 fields, ids 0 1 2 (a b c), offsets 0 2 4 6, values int8 1, 2, 3
    assert value == bytes([0x02, 3, 0, 1, 2, 0, 2, 4, 6, 0x0C, 1, 0x0C, 2, 0x0C, 3])
    assert metadata == b"\x11\x03\x00\x01\x02\x03abc"


def test_insertion_order_does_not_change_bytes() -> None:
    first = {"x": 1, "y": {"q": [1, 2], "p": "s"}, "a": 2}
    second = {"a": 2, "y": {"p": "s", "q": [1, 2]}, "x": 1}
    assert encode_variant(first) == encode_variant(second)


def test_non_string_keys_use_json_spelling_and_last_wins() -> None:
    source = {1: "int", "2": "str", 2: "int2", None: "none", False: "f", b"\x00": "bin", (1, "x"): "tuple", 1.5: "f"}
    expected = {"1": "int", "2": "int2", "null": "none", "false": "f", "AA==": "bin", '[1,"x"]': "tuple", "1.5": "f"}
    assert spark_python(source) == expected
    assert spark_python({True: 1}) == {"true": 1}


@pytest.mark.parametrize(("count", "large"), [(255, False), (256, True), (1000, True)])
def test_array_is_large_only_above_255_elements(count: int, large: bool) -> None:
    items = list(range(count))
    value, metadata = encode_variant(items)
    assert value[0] & 0x3 == 3
    assert bool(value[0] >> 2 & 0x4) == large
    assert pyspark_reads(value, metadata) == items


@pytest.mark.parametrize(("total", "size"), [(255, 1), (256, 2), (65535, 2), (65536, 3), (2**24, 4)])
def test_array_offset_size_is_smallest_that_fits(total: int, size: int) -> None:
    text = "x" * (total - 5)  # long string: 5 header bytes
    value, metadata = encode_variant([text])
    assert (value[0] >> 2 & 0x3) + 1 == size
    assert pyspark_reads(value, metadata) == [text]


@pytest.mark.parametrize("count", [255, 256, 300, 70_000])
def test_object_field_id_size_and_is_large(count: int) -> None:
    obj = {f"k{i:06d}": i for i in range(count)}
    value, metadata = encode_variant(obj)
    info = value[0] >> 2
    assert bool(info & 0x10) == (count > 255)
    assert ((info >> 2) & 0x3) + 1 == (1 if count <= 256 else 2 if count <= 65536 else 3)
    key_bytes = 7 * count  # every key is 7 ASCII bytes; the offset size must hold it and the count
    assert (metadata[0] >> 6) + 1 == (1 if key_bytes < 2**8 else 2 if key_bytes < 2**16 else 3)
    assert pyspark_reads(value, metadata) == obj


def test_small_object_in_large_dictionary_uses_its_own_id_size() -> None:
    big = {f"k{i:04d}": i for i in range(300)}
    value, metadata = encode_variant([{"k0000": 1}, big])
    decoded = pyspark_reads(value, metadata)
    assert decoded == [{"k0000": 1}, big]
    # the first element sits right after the array's header, count and offsets
    offset_size = (value[0] >> 2 & 0x3) + 1
    first = value[2 + 3 * offset_size :]
    assert first[0] == 0x02  # object, 1-byte ids (id 0 fits), 1-byte offsets


# ---- property tests ----

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | st.text(max_size=80)
    | st.binary(max_size=80)
    | st.decimals(allow_nan=False, allow_infinity=False, places=None)
    | st.dates()
    | st.datetimes()
    | st.datetimes(timezones=st.just(UTC))
)
values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)


def expected_from_spark(value: Any) -> Any:
    """What pyspark's reader must return for ``value`` by the documented rules."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return value
        return Decimal(value) if abs(value) < 10**38 else str(value)
    if isinstance(value, Decimal):
        _, digits, exponent = value.as_tuple()
        scale = max(0, -exponent)
        precision = max(scale, 1 if digits == (0,) else len(digits) + max(exponent, 0))
        return value if precision <= 38 else str(value)
    if isinstance(value, dict):
        return {key: expected_from_spark(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expected_from_spark(item) for item in value]
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value  # pyspark returns an aware datetime in UTC; equality compares instants
    return value


@settings(max_examples=300, deadline=None)
@given(values)
def test_pyspark_reads_back_every_value(value: Any) -> None:
    encoded, metadata = encode_variant(value)
    assert pyspark_reads(encoded, metadata) == expected_from_spark(value)
    assert decode_variant(encoded, metadata) == expected_from_spark(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.integers(), max_size=12), st.randoms())
def test_encoding_is_canonical_for_any_insertion_order(obj: dict[str, int], rnd: Any) -> None:
    items = list(obj.items())
    rnd.shuffle(items)
    assert encode_variant(dict(items)) == encode_variant(obj)


@settings(max_examples=300, deadline=None)
@given(values, st.data())
def test_decoder_rejects_truncated_or_damaged_bytes_cleanly(value: Any, data: st.DataObject) -> None:
    encoded, metadata = encode_variant(value)
    cut = data.draw(st.integers(min_value=0, max_value=max(0, len(encoded) - 1)))
    position = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
    damaged = bytearray(encoded)
    damaged[position] ^= data.draw(st.integers(min_value=1, max_value=255))
    for candidate in (encoded[:cut], bytes(damaged)):
        with contextlib.suppress(CorruptDataError):
            decode_variant(candidate, metadata)
