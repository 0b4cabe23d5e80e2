"""Compiled twin of :func:`spark_logsource.mysql.rows_encode.encode_rows_event_py` (``_kernel.c``)."""

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

def compile_plan(specs: list[tuple[Any, ...]], order: list[int], metadata: Any, json_keys: Any) -> object:
    """The compiled description of one row-image shape (see ``rows_encode._plan``)."""

_Side = tuple[bytes, bytes, bytes | None, bytes | None]

def encode_rows(data: bytes | memoryview, pos: int, plan: object, plan_after: object, op: int, as_json: bool,
                path: str | None, data_base: int, in_block: bool, label: str) -> tuple[int, _Side, _Side | None]:
    """Encode the row images of one rows event: ``(n, first, second)``, each side ``(ends, data, meta_ends, meta)``
    (Arrow column parts, see ``rows_encode.ImageColumn``); ``second`` is None unless the event is an UPDATE."""

def rows_head(body: bytes | memoryview, table_id_size: int, post_header_len: int, v2: bool,
              update: bool) -> tuple[int, int, int, int, int, int] | None:
    """``(table_id, flags, pos, ncols, present, present_after)`` of a well-formed uncompressed rows event, else
    None (then ``rows.parse_rows_head`` reads it and raises its errors)."""

def encode_rows_run(buf: bytes, start: int, limit: int, base: int, stop: int, crc_len: int, verify: bool,
                    crc32: Any, type_code: int, table_id_size: int, post_header_len: int, v2: bool, table_id: int,
                    ncols: int, present: int, present_after: int, plan: object, plan_after: object, op: int,
                    as_json: bool, path: str | None, label: str, max_rows: int,
                    max_bytes: int) -> tuple[bytes, int, _Side, _Side | None]:
    """A run of rows events of one table and shape in ``buf[start:limit]`` (see ``rows_run.py``):
    ``(events, n, first, second)``, ``events`` packing five little-endian int64 per event (offset, next offset,
    timestamp, server id, rows), the sides as in :func:`encode_rows`; ``events`` is empty when not even the first
    event could be read."""
