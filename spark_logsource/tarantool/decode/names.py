"""Names of Tarantool's request types and IPROTO map keys, as they appear in our output.

Source: tarantool/tarantool ``src/box/iproto_constants.h`` (``IPROTO_KEYS``, ``IPROTO_TYPES``,
``IPROTO_RAFT_KEYS``, ``VY_RUN_INFO_KEYS``, ``VY_PAGE_INFO_KEYS``, ``VY_ROW_INDEX_KEYS``) and
``docs/formats/tarantool-xlog.md`` ("Request types", "Body keys").
Key names are the constant names in lower case without the ``IPROTO_``
prefix (``IPROTO_INDEX_BASE`` → ``index_base``); a code without a name is written as its decimal digits.
"""

from __future__ import annotations

#: Request type codes → names (``iproto_type_name``); unknown codes are rendered as decimal text.
REQUEST_TYPES: dict[int, str] = {
    0: "OK",
    1: "SELECT",
    2: "INSERT",
    3: "REPLACE",
    4: "UPDATE",
    5: "DELETE",
    6: "CALL_16",
    7: "AUTH",
    8: "EVAL",
    9: "UPSERT",
    10: "CALL",
    11: "EXECUTE",
    12: "NOP",
    13: "PREPARE",
    14: "BEGIN",
    15: "COMMIT",
    16: "ROLLBACK",
    17: "INSERT_ARROW",
    18: "DELETE_RANGE",
    30: "RAFT",
    31: "RAFT_PROMOTE",
    32: "RAFT_DEMOTE",
    40: "RAFT_CONFIRM",
    41: "RAFT_ROLLBACK",
    100: "RUNINFO",
    101: "PAGEINFO",
    102: "ROWINDEX",
}

TYPE_UPDATE = 4
TYPE_UPSERT = 9
TYPE_NOP = 12
TYPE_RAFT = 30
TYPE_RUNINFO = 100
TYPE_PAGEINFO = 101
TYPE_ROWINDEX = 102

#: IPROTO keys (header and body share one code space).
IPROTO_KEYS: dict[int, str] = {
    0x00: "type",
    0x01: "sync",
    0x02: "replica_id",
    0x03: "lsn",
    0x04: "timestamp",
    0x05: "schema_version",
    0x06: "server_version",
    0x07: "group_id",
    0x08: "tsn",
    0x09: "flags",
    0x0A: "stream_id",
    0x0B: "thread_id",
    0x10: "space_id",
    0x11: "index_id",
    0x12: "limit",
    0x13: "offset",
    0x14: "iterator",
    0x15: "index_base",
    0x1F: "fetch_position",
    0x20: "key",
    0x21: "tuple",
    0x22: "function_name",
    0x23: "user_name",
    0x24: "instance_uuid",
    0x25: "replicaset_uuid",
    0x26: "vclock",
    0x27: "expr",
    0x28: "ops",
    0x29: "ballot",
    0x2A: "tuple_meta",
    0x2B: "options",
    0x2C: "old_tuple",
    0x2D: "new_tuple",
    0x2E: "after_position",
    0x2F: "after_tuple",
    0x30: "data",
    0x31: "error_24",
    0x32: "metadata",
    0x33: "bind_metadata",
    0x34: "bind_count",
    0x35: "position",
    0x36: "arrow",
    0x37: "begin_key",
    0x38: "end_key",
    0x40: "sql_text",
    0x41: "sql_bind",
    0x42: "sql_info",
    0x43: "stmt_id",
    0x50: "replica_anon",
    0x51: "id_filter",
    0x52: "error",
    0x53: "term",
    0x54: "version",
    0x55: "features",
    0x56: "timeout",
    0x57: "event_key",
    0x58: "event_data",
    0x59: "txn_isolation",
    0x5A: "vclock_sync",
    0x5B: "auth_type",
    0x5C: "replicaset_name",
    0x5D: "instance_name",
    0x5E: "space_name",
    0x5F: "index_name",
}

#: Body keys of RAFT (30) rows (``IPROTO_RAFT_KEYS``); they reuse small codes.
RAFT_KEYS: dict[int, str] = {
    0: "term",
    1: "vote",
    2: "state",
    3: "vclock",
    4: "leader_id",
    5: "is_leader_seen",
}

#: Body keys of vinyl .index RUNINFO (100) rows (``VY_RUN_INFO_KEYS``).
RUN_INFO_KEYS: dict[int, str] = {
    1: "min_key",
    2: "max_key",
    3: "min_lsn",
    4: "max_lsn",
    5: "page_count",
    6: "bloom_filter_legacy",
    7: "bloom_filter",
    8: "stmt_stat",
}

#: Body keys of vinyl .index PAGEINFO (101) rows (``VY_PAGE_INFO_KEYS``).
PAGE_INFO_KEYS: dict[int, str] = {
    1: "offset",
    2: "size",
    3: "unpacked_size",
    4: "row_count",
    5: "min_key",
    6: "row_index_offset",
}

#: Body keys of vinyl .run ROWINDEX (102) rows (``VY_ROW_INDEX_KEYS``).
ROW_INDEX_KEYS: dict[int, str] = {1: "row_index"}

#: Per request type, the key table used for body keys below 0x10 (0x10 and up are always IPROTO keys).
_SMALL_BODY_KEYS: dict[int, dict[int, str]] = {
    TYPE_RAFT: RAFT_KEYS,
    TYPE_RUNINFO: RUN_INFO_KEYS,
    TYPE_PAGEINFO: PAGE_INFO_KEYS,
    TYPE_ROWINDEX: ROW_INDEX_KEYS,
}


def type_name(code: int) -> str:
    """``INSERT`` for 2, ... ; the decimal code for a type without a name."""
    name = REQUEST_TYPES.get(code)
    return name if name is not None else str(code)


def header_key_name(code: int) -> str:
    """Name of a row header key (``flags``, ``stream_id``, ...) or its decimal code."""
    name = IPROTO_KEYS.get(code)
    return name if name is not None else str(code)


def body_key_name(request_type: int | None, code: int) -> str:
    """Name of a body key of a row of ``request_type``.

    Codes below 0x10 depend on the request: RAFT bodies use ``IPROTO_RAFT_KEYS``, vinyl RUNINFO/PAGEINFO/
    ROWINDEX bodies their own tables, every other body the header names (RAFT_CONFIRM's
    ``{0x02 replica_id, 0x03 lsn}``).
    """
    if code < 0x10 and request_type in _SMALL_BODY_KEYS:
        name = _SMALL_BODY_KEYS[request_type].get(code)
    else:
        name = IPROTO_KEYS.get(code)
    return name if name is not None else str(code)
