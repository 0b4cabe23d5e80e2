"""IPROTO, Tarantool's binary protocol: the request types and map keys of its packets, which are also the rows
of its log files (``docs/formats/tarantool-xlog.md``, "Row header keys", "Request types", "Body keys";
``docs/formats/tarantool-replication.md`` for the replication requests).

The one place these numbers are named in Python: the live client, the row decoder and the names written in the
output all take them from here. Key constants are ``K_`` + the key's output name in capitals (``K_SPACE_ID`` is
the key :data:`IPROTO_KEYS` names ``space_id``); request type constants are the type's name.
"""

from __future__ import annotations

# Request types: log rows and requests.
OK = 0
SELECT = 1
INSERT = 2
REPLACE = 3
UPDATE = 4
DELETE = 5
AUTH = 7
UPSERT = 9
NOP = 12
RAFT = 30
RUNINFO = 100
PAGEINFO = 101
ROWINDEX = 102
# Request types of replication (never rows of a file).
SUBSCRIBE = 66
VOTE = 68
FETCH_SNAPSHOT = 69
JOIN_META = 71
JOIN_SNAPSHOT = 72
#: The type of an error reply is ``ERROR_FLAG | error code``.
ERROR_FLAG = 0x8000

# Map keys (header and body share one code space).
K_TYPE = 0x00
K_SYNC = 0x01
K_REPLICA_ID = 0x02
K_LSN = 0x03
K_TIMESTAMP = 0x04
K_SCHEMA_VERSION = 0x05
K_SERVER_VERSION = 0x06
K_GROUP_ID = 0x07
K_TSN = 0x08
K_FLAGS = 0x09
K_STREAM_ID = 0x0A
K_SPACE_ID = 0x10
K_INDEX_ID = 0x11
K_LIMIT = 0x12
K_OFFSET = 0x13
K_ITERATOR = 0x14
K_KEY = 0x20
K_TUPLE = 0x21
K_USER_NAME = 0x23
K_INSTANCE_UUID = 0x24
K_REPLICASET_UUID = 0x25
K_VCLOCK = 0x26
K_OPS = 0x28
K_BALLOT = 0x29
K_DATA = 0x30
K_ERROR_24 = 0x31
K_REPLICA_ANON = 0x50
K_ERROR = 0x52

# Keys of the ballot map a VOTE reply carries under K_BALLOT.
BALLOT_VCLOCK = 0x02
BALLOT_GC_VCLOCK = 0x03

#: Bit of header K_FLAGS set on the last row of a transaction.
FLAG_COMMIT = 0x01

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
