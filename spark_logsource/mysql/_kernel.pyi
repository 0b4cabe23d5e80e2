"""Compiled twin of :func:`spark_logsource.mysql.encode.images.encode_rows_event_py` and of view=table's typed
conversion (``_kernel.c``, ``_typed.h``; see ``table/kernel.py``)."""

from typing import Any

K_NULL: int
K_INT: int
K_FLOAT: int
K_DOUBLE: int
K_DECIMAL: int
K_DATE: int
K_YEAR: int
K_DATETIME2: int
K_TIMESTAMP2: int
K_TIME2: int
K_TIMESTAMP_OLD: int
K_DATETIME_OLD: int
K_TIME_OLD: int
K_TEXT: int
K_ENUM: int
K_SET: int
K_BIT: int
CS_UTF8: int
CS_BINARY: int
CS_TABLE: int
CS_CODEC: int
S_NONE: int
S_INT: int
S_YEAR: int
S_FLOAT: int
S_DECIMAL: int
S_DATE: int
S_DATETIME: int
S_TIMESTAMP: int
S_TEXT: int
S_BIT: int
S_BYTES: int
S_RAW: int
S_JSON: int
T_INT8: int
T_INT16: int
T_INT32: int
T_INT64: int
T_FLOAT32: int
T_FLOAT64: int
T_DECIMAL: int
T_DATE32: int
T_TIMESTAMP: int
T_STRING: int
T_BINARY: int
T_RAW: int
T_VARIANT: int

def compile_plan(specs: list[tuple[Any, ...]], order: list[int], metadata: Any, json_keys: Any) -> object:
    """The compiled description of one row-image shape (see ``encode/images.py`` ``_plan``)."""

_Side = tuple[bytes, bytes, bytes | None, bytes | None]

def encode_rows(data: bytes | memoryview, pos: int, plan: object, plan_after: object, op: int, as_json: bool,
                data_base: int, in_block: bool, label: str) -> tuple[int, _Side, _Side | None]:
    """Encode the row images of one rows event: ``(n, first, second)``, each side ``(ends, data, meta_ends, meta)``
    (Arrow column parts, see ``encode/images.py`` ``ImageColumn``); ``second`` is None unless the event is an UPDATE.
    Bad row data raises ``BinlogDecodeError`` at the file offset (``data_base`` + position, or ``data_base`` alone
    when ``in_block``), with the public class as its ``kind``: the caller adds the file."""

def rows_head(body: bytes | memoryview, table_id_size: int, post_header_len: int, v2: bool,
              update: bool) -> tuple[int, int, int, int, int, int] | None:
    """``(table_id, flags, pos, ncols, present, present_after)`` of a well-formed uncompressed rows event, else
    None (then ``rows.rows_head`` reads it and raises its errors)."""

def encode_rows_run(buf: bytes, start: int, limit: int, base: int, stop: int, crc_len: int, verify: bool,
                    crc32: Any, type_code: int, table_id_size: int, post_header_len: int, v2: bool, table_id: int,
                    ncols: int, present: int, present_after: int, plan: object, plan_after: object,
                    typed: object | None, typed_after: object | None, op: int, as_json: bool, label: str,
                    max_rows: int, max_bytes: int, map_body: bytes | None = None,
                    skip_notes: bool = False) -> tuple[bytes, int, Any, Any]:
    """A run of rows events of one table and shape in ``buf[start:limit]`` (see ``encode/runs.py``), stepping over
    the run's TABLE_MAP again (``map_body``: its body) and, with ``skip_notes``, statement texts between them:
    ``(events, n, first, second)``, ``events`` packing five little-endian int64 per event (offset, next offset,
    timestamp, server id, rows), the sides as in :func:`encode_rows`, or as in :func:`typed_rows` when ``typed`` /
    ``typed_after`` are conversions (:func:`compile_typed`); ``events`` is empty when not even the first event could
    be read."""

_Column = tuple[bytes, bytes, bytes | None]

def compile_typed(convs: list[tuple[int, int, int, int, int, int, int]]) -> object:
    """The conversions of one image shape's present columns, ``(source, target, unsigned, bits, precision, scale,
    width)`` each (see ``table/kernel.py`` ``conversion``)."""

def typed_rows(data: bytes | memoryview, pos: int, plan: object, plan_after: object, typed: object,
               typed_after: object, op: int, data_base: int, in_block: bool,
               label: str) -> tuple[int, tuple[_Column, ...], tuple[_Column, ...] | None] | None:
    """The row images of one rows event as typed columns: ``(n, first, second)``, a side holding per present
    column ``(valid, data, ends)`` (a validity byte per row; ends None for fixed-width types), or for a JSON column
    typed variant ``(valid, values, ends, metadata, metadata_ends, text_bytes)``; None when a value does not
    convert (the event takes the Python path)."""

def json_variant(text: bytes) -> tuple[bytes, bytes] | None:
    """``(value, metadata)``: the Spark Variant of a JSON text as ``encode_variant(json.JSONDecoder(
    parse_float=Decimal).decode(text))`` gives it; None where the Python reference must decide (it may raise)."""

def json_variants(texts: list[bytes]) -> list[tuple[bytes, bytes] | None]:
    """:func:`json_variant` of each text, one after another with one scratch state, as a column's values are
    converted (a document whose keys are the previous one's reuses its metadata)."""

def crc32(data: bytes | memoryview, value: int = 0) -> int:
    """``zlib.crc32(data, value)``, computed as binlog events are checked (``_native/_crc32.h``)."""

def crc32_folds() -> bool:
    """Whether :func:`crc32` folds with PCLMULQDQ here; else events are checked through ``zlib.crc32``."""

def set_crc32_folding(on: bool) -> bool:
    """Fold where the processor can (True), or never (False: the ``zlib.crc32`` path); returns :func:`crc32_folds`."""

def text_columns(kinds: tuple[tuple[int, int, int, int], ...], label: str) -> object:
    """Column builders of the snapshot's bulk SELECT reader, ``(kind, a, b, c)`` per column (the ``TX_*`` kinds of
    ``snapshot/fast.py``); ``label`` names the server and table in errors."""

def text_feed(cols: object, data: bytes | bytearray | memoryview, parse: bool) -> tuple[int, int]:
    """``(consumed, status)``: the whole row packets of ``data`` split (and parsed into ``cols`` when ``parse``);
    status 0 = more to come, 1 = the result's EOF packet consumed, 2 = an ERR packet starts at ``consumed``."""

def text_declined(cols: object) -> tuple[int, int] | None:
    """``(row, column)`` of the first value left to the Python path, or None."""

def text_take(cols: object) -> tuple[int, list[tuple[int, bytes | None, bytes, bytes | None]]]:
    """``(nrows, parts)``: per column ``(nulls, validity, data, offsets)`` (Arrow buffers); the builders restart."""
