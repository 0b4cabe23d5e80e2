"""JSON columns of view=table parsed in C (``_native/_json_variant.h``) against the Python reference.

The reference is what ``table_schema`` does with a JSON value that arrives as text (MariaDB's JSON is a LONGTEXT):
``encode_variant(json.JSONDecoder(parse_float=Decimal).decode(text))``. The C parser must give the same bytes, or
leave the text to Python (``json_variant`` answers None, an event declines); it must never give other bytes.
Checked on documents the real MariaDB stored, then on generated and mutated texts.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.mysql.table import rows as typed_rows
from spark_logsource.mysql.table.layout import _JSON_DECODER
from tests.support.mysql_typed import DB, count_kernel_events
from tests.support.twins import activate, compiled

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass


def _c() -> Any:
    """The compiled module holding the JSON parser (the test is skipped where it is not built)."""
    return compiled("spark_logsource.mysql._kernel")


#: Texts C leaves to Python although the reference encodes them (the rest of what it leaves, Python refuses too).
LEFT_TO_PYTHON = [
    '{"a": 1, "a": {"b": 2}}',  # a duplicate key: the last wins, "b" stays out of the dictionary
    "123456789012345678901234567890123456789",  # 39 digits: a string in the Variant
    "[1e400]",  # precision above 38: a string
]
#: Nesting MariaDB refuses in a JSON column (deeper than 32), possible in a LONGTEXT a DDL file declares JSON.
DEEP_CONVERTED, DEEP_LEFT = "[" * 64 + "]" * 64, "[" * 70 + "]" * 70
#: Texts C converts itself, each one a rule of the encoding.
CONVERTED = [
    "null", "true", " [false] ", "0", "-0", "127", "128", "-32769", "2147483648", "9223372036854775807",
    "9223372036854775808", "-99999999999999999999999999999999999999", "0.0", "-0.0", "10.50", "0.000123", "1e2",
    "1E+2", "0e5", "1.0e-2", "2.5E-3", "123456789.5", "1234567890123456789.5",
    "0.1234567890123456789012345678901234567",
    '"\\u00e9\\ud83d\\ude00 \\/\\b\\f\\n\\r\\t\\"\\\\"', '"é 😀"', '"' + "x" * 63 + '"', '"' + "x" * 64 + '"',
    '{"é": 1, "e": 2, "z": [], "": {}}', '{"b": {"a": [{"c": null}]}, "a": false}',
    "[" + ",".join(["1"] * 300) + "]", "{" + ",".join(f'"k{i}": {i}' for i in range(300)) + "}",
    '["' + "y" * 300 + '", 1]',
    # containers whose children take 255 / 256 / 65535 / 65536 bytes: the offset width changes there
    json.dumps(["x" * 50] * 5), json.dumps(["x" * 50] * 4 + ["x" * 51]), json.dumps(["x" * 65530]),
    json.dumps(["x" * 65531]),
    # more than 256 keys in the document: an object of 255 bytes is no longer in the small form
    json.dumps({**{f"k{i}": 0 for i in range(300)}, "z": {c: "x" * 50 for c in "abcde"}}),
]


def _reference(text: bytes) -> tuple[bytes, bytes] | None:
    """The reference's Variant of ``text``, or None where it raises."""
    try:
        return encode_variant(_JSON_DECODER.decode(text.decode("utf-8")))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or no Variant encoding (VariantEncodeError)
        return None


def _same_or_declined(text: bytes) -> bool:
    """Whether C converted ``text`` (checking that its bytes are the reference's)."""
    ours = _c().json_variant(text)
    if ours is not None:
        assert ours == _reference(text), text[:200]
    return ours is not None


@pytest.mark.parametrize("text", [*CONVERTED, DEEP_CONVERTED], ids=lambda text: text[:24])
def test_each_rule_converts_in_c(text: str) -> None:
    assert _same_or_declined(text.encode()), "left to Python"


#: A text above JV_MAX_TEXT (1 MiB): the parse tree would take up to ~30 times its size.
LONG = json.dumps(["x" * (1 << 20)])
#: Not JSON as Python reads it, no Variant of it (a lone surrogate does not encode as UTF-8), or Python's extensions
#: (NaN, -Infinity) which C leaves to it.
REFUSED = ["01", "1.", "[1,]", "NaN", "-Infinity", '"\\ud800"', '"\x01"', "", "true false", '{"a" 1}', '{1: 2}',
           '"\\x41"']


@pytest.mark.parametrize("text", [*LEFT_TO_PYTHON, DEEP_LEFT, LONG, *REFUSED], ids=lambda text: text[:24])
def test_the_rest_is_left_to_python(text: str) -> None:
    assert not _same_or_declined(text.encode())


_KEYS = ["a", "b", "id", "tag", "vals", "ok", "é", "ключ", "😀", "", "a b", "A", "aa", "key\nwith\\escapes"]


def _number(rng: random.Random) -> str:
    """An int of at most 38 digits, or a decimal of at most 38 (20 whole digits, 11 fraction ones, exponent -15..7)."""
    sign = rng.choice(["", "-"])
    if rng.random() < 0.5:
        return sign + str(rng.choice([0, 1, 7, 127, 128, 255, 32767, 32768, 2**31, 2**63 - 1, 2**63, 10**38 - 1,
                                      rng.randrange(10**rng.randrange(1, 38))]))
    text = sign + str(rng.choice([0, 1, 12, 2**31, rng.randrange(10**rng.randrange(1, 20))]))
    if rng.random() < 0.7:
        text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 12)))
    if rng.random() < 0.4 or "." not in text:
        exponent = rng.randrange(-15, 8)
        text += rng.choice("eE") + ("-" if exponent < 0 else rng.choice(["", "+"])) + str(abs(exponent))
    return text


def _string(rng: random.Random, ascii_only: bool) -> str:
    chars = "".join(rng.choice(["x", "é", "ключ", "😀", "\n", '"', "\\", "/", "\t", "\x00", " ", "tag 3"])
                    for _ in range(rng.randrange(0, 25)))
    return json.dumps(chars, ensure_ascii=ascii_only)


def _document(rng: random.Random, depth: int, ascii_only: bool, space: str) -> str:
    """A JSON text of the subset C converts: no duplicate keys, numbers of at most 38 digits, shallow."""
    kind = rng.choice(["obj", "arr", "num", "str", "lit"] if depth < 5 else ["num", "str", "lit"])
    if kind == "obj":
        keys = rng.sample(_KEYS, rng.randrange(0, 6))
        colon = f"{space}:{space}"
        items = [json.dumps(k, ensure_ascii=ascii_only) + colon + _document(rng, depth + 1, ascii_only, space)
                 for k in keys]
        return "{" + f",{space}".join(items) + "}"
    if kind == "arr":
        return "[" + f",{space}".join(_document(rng, depth + 1, ascii_only, space)
                                      for _ in range(rng.randrange(0, 6))) + "]"
    if kind == "num":
        return _number(rng)
    if kind == "str":
        return _string(rng, ascii_only)
    return rng.choice(["true", "false", "null"])


def _documents(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [_document(rng, 0, rng.random() < 0.5, rng.choice(["", " ", "\n  ", "\t"])) for _ in range(count)]


def test_generated_documents_convert_and_equal_the_reference() -> None:
    texts = _documents(11, 3000)
    converted = [_same_or_declined(t.encode()) for t in texts]
    assert all(converted), [t for t, ok in zip(texts, converted, strict=True) if not ok][:3]


def _same_shape(rng: random.Random, text: str) -> str:
    """``text`` with other leaf values: the same keys in the same order (what rows of one JSON column repeat)."""
    def leaves(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: leaves(v) for k, v in value.items()}
        if isinstance(value, list):
            return [leaves(v) for v in value]
        return rng.choice([None, True, rng.randrange(-10**6, 10**6), "other", Decimal("1.25"), [], {}])
    return json.dumps(leaves(_JSON_DECODER.decode(text)), default=str)


def test_a_column_of_documents_reuses_repeated_keys_exactly() -> None:
    """One scratch state for a run of documents, as a column's values are converted: documents repeating the
    previous one's keys (same order), the same keys in another order, nested keys shifted, empty objects,
    declines in between. Every conversion must still be the reference's bytes."""
    rng = random.Random(5)
    texts: list[bytes] = []
    for text in _documents(21, 600):
        texts.append(text.encode())
        for _ in range(rng.randrange(0, 4)):
            texts.append(_same_shape(rng, text).encode())
        if text.startswith("{") and rng.random() < 0.3:
            value = _JSON_DECODER.decode(text)
            texts.append(json.dumps(dict(reversed(list(value.items()))), default=str).encode())
        if rng.random() < 0.1:
            texts.append(rng.choice([b"{}", b"[]", b'{"a": 1, "a": 2}', b"not json", text.encode()[:-1]]))
    ours = _c().json_variants(texts)
    assert ours == [_c().json_variant(t) for t in texts]  # one state or a fresh one each: the same answers
    for text, answer in zip(texts, ours, strict=True):
        if answer is not None:
            assert answer == _reference(text), text[:200]
    assert sum(a is not None for a in ours) >= 0.9 * len(texts)


@pytest.mark.parametrize("seed", range(8))
def test_mutated_texts_are_converted_exactly_or_left_to_python(seed: int) -> None:
    """Bytes flipped, dropped, repeated or cut off: whatever C converts must be the reference's bytes."""
    rng = random.Random(seed)
    converted = 0
    mutated: list[bytes] = []
    for text in _documents(100 + seed, 400):
        data = bytearray(text.encode())
        for _ in range(rng.randrange(1, 4)):
            if not data:
                break
            at = rng.randrange(len(data))
            how = rng.randrange(4)
            if how == 0:
                data[at] = rng.choice(b'{}[]",:0123456789.eE-+\\u \x00\xc3\xa9\xff')
            elif how == 1:
                del data[at]
            elif how == 2:
                data[at:at] = data[at:at + rng.randrange(1, 6)]
            else:
                del data[at:]
        mutated.append(bytes(data))
        converted += _same_or_declined(mutated[-1])
    assert converted > 0  # some mutations leave JSON: the comparison was made
    assert _c().json_variants(mutated) == [_c().json_variant(t) for t in mutated]


def test_documents_the_server_stored(mariadb: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON column of the real MariaDB, one document per INSERT (a rows event each): the kernel path gives the
    reference's batches, each value is the server's own text parsed, and the events declined are exactly those of
    the documents C leaves to Python."""
    docs = CONVERTED + LEFT_TO_PYTHON + _documents(5, 150)

    def workload(server: Any) -> None:
        server.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        server.execute(f"CREATE OR REPLACE TABLE {DB}.jdocs (id INT PRIMARY KEY, doc JSON)")
        for i, doc in enumerate(docs):
            server.execute(f"INSERT INTO {DB}.jdocs VALUES (%s, %s)", i, doc)
        # documents made mostly of keys: their Variant value is tiny, their metadata and text are not
        server.execute(f"CREATE OR REPLACE TABLE {DB}.jkeys (id INT PRIMARY KEY, doc JSON)")
        for i in range(20):
            doc = json.dumps({f"k{i}_{j}": 1 for j in range(250)})
            server.execute(f"INSERT INTO {DB}.jkeys VALUES (%s, %s)", i, doc)

    files = [str(f) for f in mariadb.run_workload(workload, dest=tmp_path)]
    stored = dict(mariadb.query(f"SELECT id, doc FROM {DB}.jdocs"))
    assert [stored[i] for i in range(len(docs))] == docs  # MariaDB keeps the text as written

    def batches(kernel_on: bool, counts: list[tuple[str, bool]] | None = None) -> list[Any]:
        with monkeypatch.context() as patch:
            activate("c" if kernel_on else "python", patch)
            if counts is not None:
                count_kernel_events(patch, counts)
            return list(spark_logsource.iter_batches("mysql-binlog", files, view="table", table=f"{DB}.jdocs"))

    counts: list[tuple[str, bool]] = []
    ours = batches(True, counts)
    reference = batches(False)
    assert [b.num_rows for b in ours] == [b.num_rows for b in reference]
    assert all(a.equals(b) for a, b in zip(ours, reference, strict=True))
    rows = [r for b in ours for r in b.to_pylist()]
    assert [r["after"]["id"] for r in rows] == list(range(len(docs)))
    for r in rows:  # the server's SELECT text, parsed and encoded (numbers beyond 38 digits are Variant strings)
        cell = r["after"]["doc"]
        assert (cell["value"], cell["metadata"]) == encode_variant(_JSON_DECODER.decode(stored[r["after"]["id"]]))
    # the batch byte cap counts a JSON value as its text on both paths: batches are cut at the same rows
    for cap in (2000, 5000):
        cut: dict[bool, list[int]] = {}
        for kernel_on in (True, False):
            with monkeypatch.context() as patch:
                activate("c" if kernel_on else "python", patch)
                patch.setattr(typed_rows, "MAX_BATCH_BYTES", cap)
                cut[kernel_on] = [b.num_rows for b in spark_logsource.iter_batches(
                    "mysql-binlog", files, view="table", table=f"{DB}.jkeys")]
        assert len(cut[False]) > 1 and cut[True] == cut[False], (cap, cut)
    left = [i for i in range(len(docs)) if _c().json_variant(stored[i].encode()) is None]
    assert left == [docs.index(d) for d in LEFT_TO_PYTHON]
    # one event per document: those C leaves declined once each (the Python path read them), the others converted
    assert len(counts) == len(docs) and counts.count(("one", False)) == len(left), counts
