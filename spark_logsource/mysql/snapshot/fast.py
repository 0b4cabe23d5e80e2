"""The compiled path of a chunk (``docs/formats/mysql-snapshot.md`` "The bulk reader"): the chunk's SELECT read in
large blocks from the session's socket, its row packets split and turned into Arrow columns of ``view=table``'s types
by the kernel (``mysql/_kernel_text.c``), then rolled back to T on Arrow.

It is the twin of the Python path in :mod:`.chunk` (pymysql rows, :mod:`.values`, ``cell_converter``): both give the
same record batches. Where the kernel cannot be sure to give what the Python path gives, it does not guess: a column
kind it does not take (ENUM, SET, BIT, JSON, INET6, a column the view types otherwise than its own type, ...) sends
the chunk to the Python path before the SELECT; a value it declines (a zero date, text that is not UTF-8, ...) sends
it there after, and the Python path reads the chunk again in the same transaction (the same rows).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource import native
from spark_logsource.arrow.columns import constant_column
from spark_logsource.errors import CorruptDataError, SourceError
from spark_logsource.mysql.snapshot.session import Session
from spark_logsource.mysql.snapshot.values import STORED_AS_BYTES, Column
from spark_logsource.mysql.table.layout import arrow_type

__all__ = ["BLOCK", "Declined", "kernel", "read_columns", "roll_back", "seq_array", "source_array", "text_kinds"]

log = logging.getLogger(__name__)

#: Bytes read from the socket at a time (a packet longer than this grows the block to hold it).
BLOCK = 4 << 20

# the kinds of _kernel_text.c
TX_INT, TX_YEAR, TX_FLOAT, TX_DOUBLE, TX_DECIMAL, TX_DATE, TX_DATETIME, TX_TIMESTAMP, TX_STRING, TX_BINARY, \
    TX_FIXED_BINARY = range(11)
_INT_WIDTH = {pa.int8(): 0, pa.int16(): 1, pa.int32(): 2, pa.int64(): 3, pa.decimal128(20, 0): 4}
_SIMPLE = {"year": TX_YEAR, "float": TX_FLOAT, "double": TX_DOUBLE, "date": TX_DATE, "datetime": TX_DATETIME,
           "timestamp": TX_TIMESTAMP, "time": TX_STRING}
#: Key kinds the server orders as Python orders their values: a chunk without changes needs no sort.
_ORDERED_KEYS = frozenset({"int", "year"})


class Declined(Exception):
    """The compiled path does not take this chunk: the Python path reads it."""


def kernel() -> ModuleType | None:
    """The compiled module when it is built with the bulk reader (and pure Python is not asked for)."""
    k = native.load_kernel("spark_logsource.mysql._kernel")
    return k if k is not None and hasattr(k, "text_feed") else None


def text_kinds(columns: Sequence[Column], view_types: Sequence[pa.DataType | str]) -> tuple[tuple[int, ...], ...]:
    """The kernel's ``(kind, a, b, c)`` of each selected column; :class:`Declined` naming a column it does not take."""
    out: list[tuple[int, int, int, int]] = []
    for column, view_type in zip(columns, view_types, strict=True):
        spec = column.spec
        own = arrow_type(spec)
        kind: tuple[int, int, int, int] | None = None
        if not isinstance(own, str) and own == view_type and column.data_type not in STORED_AS_BYTES:
            if spec.kind == "int" and own in _INT_WIDTH:
                kind = (TX_INT, spec.size, int(spec.unsigned), _INT_WIDTH[own])
            elif spec.kind in _SIMPLE:
                kind = (_SIMPLE[spec.kind], 0, 0, 0)
            elif spec.kind == "decimal" and pa.types.is_decimal128(own) and spec.precision >= 1:
                kind = (TX_DECIMAL, spec.precision, spec.scale, 0)
            elif spec.kind in ("char", "blob"):
                binary = TX_FIXED_BINARY if column.data_type == "binary" else TX_BINARY
                kind = (binary if spec.binary else TX_STRING, 0, 0, 0)
        if kind is None:
            raise Declined(f"column {spec.name!r} ({column.data_type}, view type {view_type})")
        out.append(kind)
    return tuple(out)


def read_columns(session: Session, k: ModuleType, kinds: tuple[tuple[int, ...], ...], sql: str,
                 params: Sequence[Any], doing: str) -> tuple[int, list[tuple[int, Any, Any, Any]]]:
    """The rows of ``sql`` as the kernel's column parts ``(nrows, parts)``; :class:`Declined` where a value is
    left to the Python path (the whole result is read first, so the session can go on)."""
    import pymysql.err
    from pymysql.constants import COMMAND

    conn = session.conn
    cols = k.text_columns(kinds, f"{session.settings.source}/{session.table}")
    try:
        with conn.cursor() as cur:
            query = cur.mogrify(sql, tuple(params) or None)
        conn._execute_command(COMMAND.COM_QUERY, query)
        first = conn._read_packet()  # an ERR packet raises here
        if first.is_ok_packet():
            raise SourceError(session.settings.source, None, f"{doing} ({session.table}): the server answered the "
                                                             "SELECT without a result set")
        count = first.read_length_encoded_integer()
        if count != len(kinds):
            raise SourceError(session.settings.source, None, f"{doing} ({session.table}): {count} column(s) in the "
                                                             f"result, {len(kinds)} selected")
        for _ in range(count + 1):  # the column definitions, then their EOF packet
            conn._read_packet()
        _read_rows(conn._rfile, k, cols)
    except (SourceError, CorruptDataError):
        raise
    except pymysql.err.MySQLError as exc:
        raise session.error(exc, doing) from None
    except Exception as exc:
        raise session.error(exc, doing) from None
    declined = k.text_declined(cols)
    if declined is not None:
        raise Declined(f"row {declined[0]}, column #{declined[1] + 1}: a value the compiled reader leaves to Python")
    nrows, parts = k.text_take(cols)
    return int(nrows), parts


def _read_rows(rfile: Any, k: ModuleType, cols: object) -> None:
    """Blocks from the socket file into the kernel until the result's EOF packet; a packet cut by a block's end
    moves to the front of the next."""
    import pymysql.err

    buf = bytearray(BLOCK)
    have = 0
    while True:
        # read1, not readinto1: with bytes already buffered, readinto1 into a large buffer also waits on the socket
        data = rfile.read1(len(buf) - have)
        if not data:
            raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
        buf[have:have + len(data)] = data
        have += len(data)
        with memoryview(buf) as view:
            consumed, status = k.text_feed(cols, view[:have], True)
        if status == 2:
            end = consumed + 4 + int.from_bytes(buf[consumed:consumed + 3], "little")
            pymysql.err.raise_mysql_exception(bytes(buf[consumed + 4:end]))
        if status == 1:
            if consumed != have:
                raise pymysql.err.InternalError("bytes after the end of the result set")
            return
        rest = have - consumed
        buf[:rest] = buf[consumed:have]
        have = rest
        if have == len(buf):  # one packet longer than the block
            buf.extend(bytes(len(buf)))


def roll_back(table: pa.Table, key_names: Sequence[str], restored: pa.Table | None, removed: list[tuple[Any, ...]],
              ordered: bool) -> pa.Table:
    """The chunk's rows as of T: the rows of the ``removed`` keys (converted key values) taken out, the ``restored``
    before-images put in, in key order (``sort_indices``: the order Python gives the decoded keys)."""
    if removed:
        first = pa.array([key[0] for key in removed], table.schema.field(key_names[0]).type)
        mask = pc.is_in(table.column(key_names[0]), value_set=first)
        if len(key_names) > 1:  # the candidates by their first key column, then the whole key compared
            wanted = set(removed)
            candidates = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            keys = zip(*(table.column(n).take(pa.array(candidates)).to_pylist() for n in key_names), strict=True)
            hit = np.zeros(table.num_rows, dtype=bool)
            hit[[i for i, key in zip(candidates, keys, strict=True) if key in wanted]] = True
            mask = pa.array(hit)
        table = table.filter(pc.invert(mask))
    if restored is not None and restored.num_rows:
        table = pa.concat_tables([table, restored])
        ordered = False
    if not ordered:
        table = table.take(pc.sort_indices(table, sort_keys=[(n, "ascending") for n in key_names]))
    return table


def ordered_by_server(columns: Sequence[Column], key: Sequence[int]) -> bool:
    """Whether the server's ORDER BY of the key is Python's order of the decoded keys (integers)."""
    return all(columns[i].spec.kind in _ORDERED_KEYS for i in key)


def source_array(field: pa.Field, values: dict[str, Any], first: int, n: int) -> pa.Array:
    """The ``source`` struct of ``n`` rows: the plan's constants and ``row_index`` from ``first`` on."""
    children = []
    for f in field.type:
        if f.name == "row_index":
            children.append(pa.array(np.arange(first, first + n, dtype=np.int32), f.type))
        else:
            children.append(constant_column(values.get(f.name), f.type, n))
    return pa.StructArray.from_arrays(children, fields=list(field.type))


def seq_array(type_: pa.DataType, base: int, first: int, n: int) -> pa.Array:
    """``base + first + i`` as decimal128(38, 0), built as its 16-byte little-endian words (no Python per row)."""
    low, high = base % 2**64, base >> 64
    if low + first + n >= 2**64 or high >= 2**63:
        raise ValueError("seq beyond the compiled path's range")
    words = np.empty((n, 2), dtype=np.uint64)
    words[:, 0] = np.arange(n, dtype=np.uint64) + np.uint64(low + first)
    words[:, 1] = np.uint64(high)
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(words.tobytes())])
