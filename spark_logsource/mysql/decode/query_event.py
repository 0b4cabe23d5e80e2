"""QUERY_EVENT (type 2) and MariaDB QUERY_COMPRESSED_EVENT (165): post-header, status variables, schema, query.

Layout (mysql-server ``libs/mysql/binlog/event/statement_events.cpp`` ``Query_event::Query_event``; MariaDB
``sql/log_event.cc`` ``Query_log_event::Query_log_event``): post-header thread_id u32, exec_time u32,
db_len u8, error_code u16, status_vars_len u16 (binlog v4; post_header_len[QUERY] = 13); then the status
variables (code u8 + a value whose size the code fixes), the schema (db_len bytes + NUL) and the query text
to the end of the event (for QUERY_COMPRESSED: a MariaDB compressed block, see compression.py).

Status variables decoded (``Query_event_status_vars`` in statement_events.h; MariaDB adds 128+):
0 flags2 u32, 1 sql_mode u64, 2 catalog (u8 len + text + NUL, 5.0.0–5.0.3), 3 auto_increment
(increment u16, offset u16), 4 charset (client, connection, server collation u16 each), 5 time_zone
(u8 len + text), 6 catalog_nz (u8 len + text), 7 lc_time_names u16, 8 charset_database u16,
9 table_map_for_update u64, 10 master_data_written u32, 11 invoker (u8 len user, u8 len host),
12 updated_db_names (u8 count, 254 = too many and no names, else count NUL-terminated names),
13 microseconds u24, 14 commit_ts u64 (reserved by MySQL, never written by the servers we know),
16 explicit_defaults_for_timestamp u8, 17 ddl_xid u64, 18 default_collation_for_utf8mb4 u16,
19 sql_require_primary_key u8, 20 default_table_encryption u8; MariaDB 128 hrnow u24 (microseconds),
129 xid u64. An unknown code stops the parsing (its size is unknown): the remaining status bytes are kept as
``status_vars_unparsed``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spark_logsource.errors import CorruptDataError, TruncatedDataError
from spark_logsource.mysql.binlog.compression import DEFAULT_MAX_UNCOMPRESSED, mariadb_uncompress
from spark_logsource.mysql.decode.packed import BinlogDecodeError

__all__ = ["decode_status_vars", "parse_query", "query_text"]

_POST_HEADER = 13
_OVER_MAX_DBS = 254


def _u(size: int) -> Callable[[bytes, int], tuple[Any, int]]:
    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise IndexError
        return int.from_bytes(buf[pos:pos + size], "little"), pos + size
    return read


def _short_text(buf: bytes, pos: int) -> tuple[str, int]:
    size = buf[pos]
    end = pos + 1 + size
    if end > len(buf):
        raise IndexError
    return buf[pos + 1:end].decode("utf-8", "replace"), end


def _catalog_old(buf: bytes, pos: int) -> tuple[str, int]:
    text, end = _short_text(buf, pos)
    return text, end + 1  # NUL terminator


def _auto_increment(buf: bytes, pos: int) -> tuple[dict[str, int], int]:
    inc, pos = _u(2)(buf, pos)
    off, pos = _u(2)(buf, pos)
    return {"increment": inc, "offset": off}, pos


def _charset(buf: bytes, pos: int) -> tuple[dict[str, int], int]:
    client, pos = _u(2)(buf, pos)
    connection, pos = _u(2)(buf, pos)
    server, pos = _u(2)(buf, pos)
    return {"character_set_client": client, "collation_connection": connection, "collation_server": server}, pos


def _invoker(buf: bytes, pos: int) -> tuple[dict[str, str], int]:
    user, pos = _short_text(buf, pos)
    host, pos = _short_text(buf, pos)
    return {"user": user, "host": host}, pos


def _updated_db_names(buf: bytes, pos: int) -> tuple[list[str] | None, int]:
    count = buf[pos]
    pos += 1
    if count == _OVER_MAX_DBS:
        return None, pos
    names = []
    for _ in range(count):
        end = buf.index(b"\0", pos)
        names.append(buf[pos:end].decode("utf-8", "replace"))
        pos = end + 1
    return names, pos


_STATUS_VARS: dict[int, tuple[str, Callable[[bytes, int], tuple[Any, int]]]] = {
    0: ("flags2", _u(4)),
    1: ("sql_mode", _u(8)),
    2: ("catalog", _catalog_old),
    3: ("auto_increment", _auto_increment),
    4: ("charset", _charset),
    5: ("time_zone", _short_text),
    6: ("catalog", _short_text),
    7: ("lc_time_names", _u(2)),
    8: ("charset_database", _u(2)),
    9: ("table_map_for_update", _u(8)),
    10: ("master_data_written", _u(4)),
    11: ("invoker", _invoker),
    12: ("updated_db_names", _updated_db_names),
    13: ("microseconds", _u(3)),
    14: ("commit_ts", _u(8)),
    16: ("explicit_defaults_for_timestamp", _u(1)),
    17: ("ddl_xid", _u(8)),
    18: ("default_collation_for_utf8mb4", _u(2)),
    19: ("sql_require_primary_key", _u(1)),
    20: ("default_table_encryption", _u(1)),
    128: ("hrnow", _u(3)),
    129: ("xid", _u(8)),
}


def decode_status_vars(raw: bytes) -> dict[str, Any]:
    """Decode the status-variable block ``raw``; errors are at positions in ``raw``."""
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(raw):
        code = raw[pos]
        known = _STATUS_VARS.get(code)
        if known is None:
            out["unknown_code"] = code
            out["status_vars_unparsed"] = bytes(raw[pos:])
            break
        name, read = known
        try:
            out[name], pos = read(raw, pos + 1)
        except (IndexError, ValueError):
            raise BinlogDecodeError(pos, f"QUERY status variable {name} (code {code}) runs past the status block",
                                    TruncatedDataError) from None
    return out


def parse_query(body: bytes, *, compressed: bool, post_header_len: int = _POST_HEADER,
                max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> dict[str, Any]:
    """Decode a QUERY / QUERY_COMPRESSED body; errors are :class:`BinlogDecodeError` at positions in the body."""
    if post_header_len < _POST_HEADER or len(body) < post_header_len:
        raise BinlogDecodeError(0, f"QUERY post-header needs {max(post_header_len, _POST_HEADER)} bytes, the body "
                                   f"has {len(body)}", TruncatedDataError)
    thread_id = int.from_bytes(body[0:4], "little")
    exec_time = int.from_bytes(body[4:8], "little")
    db_len = body[8]
    error_code = int.from_bytes(body[9:11], "little")
    status_len = int.from_bytes(body[11:13], "little")
    pos = post_header_len
    if pos + status_len + db_len + 1 > len(body):
        raise BinlogDecodeError(11, f"QUERY status block ({status_len} bytes) and schema ({db_len} bytes) run past "
                                    f"the event ({len(body)} bytes)")
    try:
        status = decode_status_vars(body[pos:pos + status_len])
    except BinlogDecodeError as exc:
        raise BinlogDecodeError(pos + (exc.pos or 0), exc.reason, exc.kind) from None
    pos += status_len
    schema = body[pos:pos + db_len].decode("utf-8", "replace")
    pos += db_len + 1
    raw_query = body[pos:]
    if compressed:
        try:
            raw_query = mariadb_uncompress(raw_query, None, pos, max_uncompressed)
        except CorruptDataError as exc:
            raise BinlogDecodeError.of(exc) from None
    return {
        "thread_id": thread_id, "exec_time": exec_time, "error_code": error_code,
        "status_vars": status, "schema": schema, "query": query_text(raw_query),
    }


def query_text(raw: bytes) -> str:
    """SQL text as str: UTF-8, with undecodable bytes replaced (the column is a Spark string)."""
    return bytes(raw).decode("utf-8", "replace")
