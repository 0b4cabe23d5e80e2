"""Text renderings of rows: JSON lines, YAML documents, and a tab-separated table.

Columns a format fills with JSON text (its ``json_text_columns``, under its ``text_options``) are written as
nested JSON, exactly as the reader made them; variant columns (when an ``--option`` asks for them) are decoded;
other values as JSON data (timestamps as ISO 8601 text, bytes as base64, decimals as strings in plain notation).

Numbers are never routed through a float: a JSON-text column's numbers keep the text the reader wrote (YAML prints
that text), and a variant's decimals stay :class:`decimal.Decimal` (JSON prints their digits). A DECIMAL(38,6)
prints all its digits, as ``mysqlbinlog`` prints it.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import pyarrow as pa

from spark_logsource.arrow.columns import variant_type
from spark_logsource.arrow.jsontext import JsonEncodeError, datetime_text, to_json
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import LogSourceError
from spark_logsource.logformat import LogFormat

#: Renderings of Arrow batches (``cat --format``, ``follow --output``).
BATCH_FORMATS = ("json", "yaml")
#: What to install when a library of the ``cli`` extra is missing.
CLI_EXTRA = "pip install 'spark-logsource[cli]'"


class JsonNumber(str):
    """A number of JSON text, kept as the text written (a DECIMAL's every digit, a double's shortest repr)."""

    __slots__ = ()


def parse_json_text(text: str) -> Any:
    """JSON text as Python data; its non-integer numbers as :class:`JsonNumber` (integers are exact anyway)."""
    return json.loads(text, parse_float=JsonNumber)


def require_output_format(fmt: str) -> None:
    """Fail before reading anything when ``fmt`` needs a library that is not installed (the ``cli`` extra)."""
    if fmt != "yaml":
        return
    try:
        import yaml  # noqa: F401
    except ImportError:
        raise LogSourceError(f"YAML output needs PyYAML, which is not installed: {CLI_EXTRA}") from None


def _yaml_number(text: str) -> str:
    """``text`` as a YAML 1.1 float that PyYAML reads back as a number: a mantissa without a dot gets ``.0``
    and an exponent its sign (``1e-05`` → ``1.0e-05``, as PyYAML writes floats itself); the value is unchanged."""
    mantissa, e, exponent = text.replace("E", "e").partition("e")
    if not e:
        return text if "." in text else text + ".0"
    if "." not in mantissa:
        mantissa += ".0"
    if exponent[:1] not in ("-", "+"):
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


@functools.cache
def _yaml_dumper() -> Any:
    """PyYAML's SafeDumper, writing a :class:`JsonNumber` as a number, digit for digit."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def number(dumper: Any, value: JsonNumber) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:float", _yaml_number(str(value)))

    Dumper.add_representer(JsonNumber, number)
    return Dumper


def json_columns(cls: type[LogFormat], schema: pa.Schema) -> frozenset[str]:
    """The columns of ``schema`` holding JSON text: the format's ``json_text_columns`` that are strings here (an
    ``--option`` may have asked for another encoding)."""
    return frozenset(f.name for f in schema if f.name in cls.json_text_columns and pa.types.is_string(f.type))


def plain(value: Any) -> Any:
    """A value as JSON / YAML data, rendered as the JSON-text columns render theirs (nested values too)."""
    if isinstance(value, dt.datetime):
        return datetime_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else str(value)  # plain notation, as mysqlbinlog prints
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def variant_columns(schema: pa.Schema) -> frozenset[str]:
    """Columns holding Spark variants (when a user's option asked for them instead of JSON text)."""
    return frozenset(f.name for f in schema if f.type == variant_type())


def _rows(batch: pa.RecordBatch) -> Iterator[dict[str, Any]]:
    """The rows of ``batch``, its variant columns decoded to Python values."""
    variants = variant_columns(batch.schema)
    for row in batch.to_pylist():
        for name in variants:
            cell = row[name]
            if cell is not None:
                row[name] = decode_variant(cell["value"], cell["metadata"])
        yield row


def json_line(row: dict[str, Any], json_cols: frozenset[str]) -> str:
    """One JSON object; the JSON-text columns are written as the reader made them (never re-encoded)."""
    parts = []
    for key, value in row.items():
        text = value if key in json_cols and value is not None else json.dumps(plain(value), ensure_ascii=False)
        parts.append(f"{json.dumps(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def iter_records(batches: Iterable[pa.RecordBatch], json_cols: frozenset[str]) -> Iterator[dict[str, Any]]:
    """Rows as plain dicts; the JSON-text columns are parsed so they nest in the output (YAML)."""
    for batch in batches:
        for row in _rows(batch):
            yield {k: (parse_json_text(v) if k in json_cols and v is not None else plain(v)) for k, v in row.items()}


def write_batch(out: IO[str], batch: pa.RecordBatch, fmt: str, json_cols: frozenset[str]) -> None:
    """``batch`` as JSON lines (``json``) or YAML documents (``yaml``)."""
    if fmt == "yaml":
        import yaml

        dumper = _yaml_dumper()
        for record in iter_records((batch,), json_cols):
            out.write(yaml.dump(record, Dumper=dumper, explicit_start=True, sort_keys=False, allow_unicode=True))
    elif fmt == "json":
        for row in _rows(batch):
            out.write(json_line(row, json_cols))
            out.write("\n")
    else:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {BATCH_FORMATS}")


def json_text(value: Any) -> str:
    """Compact JSON of a result value: decimals as exact numbers (:func:`~spark_logsource.arrow.jsontext.to_json`);
    a type JSON has no rendering for as its text."""
    try:
        return to_json(value)
    except JsonEncodeError:
        return json.dumps(value, ensure_ascii=False, default=str)


def table_cell(value: Any) -> str:
    """One cell of the tab-separated table: NULL, nested values as JSON, the rest as text."""
    if value is None:
        return "NULL"
    if isinstance(value, dict | list):
        return json_text(value)
    if isinstance(value, decimal.Decimal):
        return str(plain(value))
    return str(value)


def write_table(out: IO[str], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A header line of column names, then one tab-separated line per row."""
    out.write("\t".join(columns) + "\n")
    for row in rows:
        out.write("\t".join(table_cell(v) for v in row) + "\n")
