"""The C kernel and the Python reference agree on msgpack maps whose keys repeat or collide as text.

Tarantool does not forbid repeated map keys; the reference follows Python dict semantics (last value wins,
keys of dropped values do not reach the Variant metadata). Values are generated, and the property is only that
the two implementations give the same lists (no expected value is written here).
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_logsource.tarantool.decode import rows
from tests.support.tarantool_columns import builder_decoder
from tests.support.twins import compiled

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass

decode_columns_c = builder_decoder("c")
decode_columns_py = builder_decoder("python")

keys = st.one_of(st.sampled_from(["x", "y", "1", "inner"]), st.integers(0, 3), st.booleans())
scalars = st.one_of(st.none(), st.integers(-(2**63), 2**64 - 1), st.text(max_size=5), st.binary(max_size=4),
                    st.floats(allow_nan=False))


def pack_map(pairs: list[tuple[bytes, bytes]]) -> bytes:
    n = len(pairs)
    head = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
    return head + b"".join(k + v for k, v in pairs)


def maps(children):
    """Maps whose first key comes again at the end (Python keeps the last value, at the first key's place)."""
    pairs = st.lists(st.tuples(keys.map(msgpack.packb), children), min_size=1, max_size=12)
    return st.tuples(pairs, children).map(lambda t: pack_map([*t[0], (t[0][0][0], t[1])]))


values = st.recursive(
    scalars.map(msgpack.packb),
    lambda children: st.one_of(
        maps(children),
        st.lists(children, max_size=4).map(lambda xs: bytes([0x90 | len(xs)]) + b"".join(xs)),
    ),
    max_leaves=30,
)


def insert_row(tuple_bytes: bytes) -> bytes:
    header = msgpack.packb({0: 2, 2: 1, 3: 7})
    return header + b"\x82" + msgpack.packb(0x10) + msgpack.packb(512) + msgpack.packb(0x21) + tuple_bytes


@settings(max_examples=400, deadline=None)
@given(st.lists(values, min_size=1, max_size=3))
def test_maps_with_repeated_keys_encode_the_same_in_c_and_python(fields) -> None:
    payload = insert_row(bytes([0x90 | len(fields)]) + b"".join(fields))
    decode_payload_c = compiled("spark_logsource.tarantool._kernel").decode_payload
    for fmt in ("variant", "json", "msgpack"):
        expected = rows.decode_payload_py(payload, fmt, "gen", 0)
        assert decode_payload_c(payload, fmt, "gen", 0) == expected
        assert decode_columns_c(payload, fmt, "gen", 0) == expected
        assert decode_columns_py(payload, fmt, "gen", 0) == expected
