"""Names of Tarantool's request types and IPROTO map keys, as they appear in our output (the tables of codes are
in :mod:`spark_logsource.tarantool.iproto`).

Source: tarantool/tarantool ``src/box/iproto_constants.h`` (``IPROTO_KEYS``, ``IPROTO_TYPES``,
``IPROTO_RAFT_KEYS``, ``VY_RUN_INFO_KEYS``, ``VY_PAGE_INFO_KEYS``, ``VY_ROW_INDEX_KEYS``) and
``docs/formats/tarantool-xlog.md`` ("Request types", "Body keys").
Key names are the constant names in lower case without the ``IPROTO_``
prefix (``IPROTO_INDEX_BASE`` → ``index_base``); a code without a name is written as its decimal digits.
"""

from __future__ import annotations

from spark_logsource.tarantool.iproto import IPROTO_KEYS, PAGEINFO, RAFT, REQUEST_TYPES, ROWINDEX, RUNINFO

__all__ = ["IPROTO_KEYS", "PAGE_INFO_KEYS", "RAFT_KEYS", "REQUEST_TYPES", "ROW_INDEX_KEYS", "RUN_INFO_KEYS",
           "body_key_name", "header_key_name", "type_name"]

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
    RAFT: RAFT_KEYS,
    RUNINFO: RUN_INFO_KEYS,
    PAGEINFO: PAGE_INFO_KEYS,
    ROWINDEX: ROW_INDEX_KEYS,
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
