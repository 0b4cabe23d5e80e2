"""A SELECT's values in the form the binlog decoder gives them (``mysql/decode/values.py``), so that one conversion
(``mysql/table/layout.py``'s ``cell_converter``) types the rows of the snapshot and of the binlog alike.

The session (:mod:`.session`) hands every value over as the server's text, or as bytes for binary columns; the
table below says what each declared kind becomes (``docs/formats/mysql-snapshot.md`` "Values"):

* integers, YEAR → ``int``; DECIMAL → ``Decimal`` (the server prints the column's scale, as the binlog holds it);
* FLOAT → selected as ``CAST(col AS DOUBLE)``: the float32 value widened exactly, printed with enough digits to
  read back (the FLOAT's own text has six digits); DOUBLE → ``float`` of its text;
* DATE / DATETIME → ``date`` / naive ``datetime``; TIMESTAMP (session time zone UTC) → aware ``datetime`` in UTC;
  zero or invalid ones stay text, as the decoder gives them;
* TIME → its text (``[-]HH:MM:SS[.f]`` with the column's digits, as the decoder prints it);
* BIT → ``int`` of its big-endian bytes; BINARY(n) → its bytes without the trailing zero bytes the binlog drops;
* INET4 / INET6 / UUID → selected as ``CAST(col AS BINARY)``, their stored bytes;
* text, ENUM, SET, MariaDB JSON → ``str``; binary strings, GEOMETRY → ``bytes``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from spark_logsource.mysql.decode.values import make_date, make_datetime
from spark_logsource.mysql.snapshot.session import quote
from spark_logsource.mysql.table.layout import ColumnSpec

__all__ = ["STORED_AS_BYTES", "Column", "decoder", "select_expression"]

#: MariaDB's data types stored as fixed bytes that the server prints as text.
STORED_AS_BYTES = frozenset({"inet4", "inet6", "uuid"})
_STORED_AS_BYTES = STORED_AS_BYTES


@dataclass(frozen=True, slots=True)
class Column:
    """A column of the table: its declaration (the layout) and what ``information_schema.COLUMNS`` says of it."""

    spec: ColumnSpec
    data_type: str  # DATA_TYPE, lower case: int, binary, inet6, ...
    charset: str | None = None  # CHARACTER_SET_NAME
    collation: str | None = None  # COLLATION_NAME

    @property
    def text(self) -> bool:
        """Compared by a collation (the server orders it, not Python)."""
        return self.collation is not None and self.charset != "binary"


def select_expression(column: Column) -> str:
    """The SELECT expression that gives the column's value in a form :func:`decoder` reads exactly."""
    name = quote(column.spec.name)
    if column.spec.kind == "float":
        return f"CAST({name} AS DOUBLE)"
    if column.data_type in _STORED_AS_BYTES:
        return f"CAST({name} AS BINARY)"
    return name


def _str(raw: Any) -> str:
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


def _date(raw: Any) -> dt.date | str:
    text = _str(raw)
    return make_date(int(text[0:4]), int(text[5:7]), int(text[8:10]))


def _datetime_parts(text: str) -> tuple[int, int, int, int, int, int, int, int]:
    """``YYYY-MM-DD hh:mm:ss[.f…]`` → its fields, the microseconds and the count of fraction digits."""
    whole, _dot, fraction = text.partition(".")
    micro = int((fraction + "000000")[:6]) if fraction else 0
    return (int(whole[0:4]), int(whole[5:7]), int(whole[8:10]), int(whole[11:13]), int(whole[14:16]),
            int(whole[17:19]), micro, len(fraction))


def _datetime(raw: Any) -> dt.datetime | str:
    return make_datetime(*_datetime_parts(_str(raw)))


def _timestamp(raw: Any) -> dt.datetime | str:
    text = _str(raw)
    year, month, day, hour, minute, second, micro, _fsp = _datetime_parts(text)
    if year == 0:
        return text  # the zero timestamp: as the decoder gives it
    return dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=dt.UTC)


def _bit(raw: Any) -> int:
    return int.from_bytes(raw if isinstance(raw, bytes) else _str(raw).encode("latin-1"), "big")


def _bytes(raw: Any) -> bytes:
    return raw if isinstance(raw, bytes) else _str(raw).encode("utf-8")


def _fixed_binary(raw: Any) -> bytes:
    # the server pads BINARY(n) with zero bytes; the binlog holds the value without them
    return _bytes(raw).rstrip(b"\0")


def decoder(column: Column) -> Callable[[Any], Any]:
    """The server's text (or bytes) of one non-null value of ``column`` → the binlog decoder's value."""
    spec = column.spec
    k = spec.kind
    if k in ("int", "year"):
        return lambda raw: int(_str(raw))
    if k in ("float", "double"):
        return lambda raw: float(_str(raw))
    if k == "decimal":
        return lambda raw: Decimal(_str(raw))
    if k == "date":
        return _date
    if k == "datetime":
        return _datetime
    if k == "timestamp":
        return _timestamp
    if k == "bit":
        return _bit
    if column.data_type in _STORED_AS_BYTES or k in ("geometry", "vector"):
        return _fixed_binary if column.data_type == "binary" else _bytes
    if k in ("char", "blob") and spec.binary:
        return _fixed_binary if column.data_type == "binary" else _bytes
    return _str  # text, TIME, ENUM, SET, MariaDB's JSON text
