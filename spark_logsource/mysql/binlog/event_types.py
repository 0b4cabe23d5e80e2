"""Binlog event type codes and header flags of MySQL and MariaDB.

Codes from mysql-server ``libs/mysql/binlog/event/binlog_event.h`` (``enum Log_event_type``) and MariaDB
``sql/log_event.h``; flags from the same headers (``LOG_EVENT_*_F``). Names are the enum names without the
``_EVENT`` suffix, MariaDB's prefixed ``MARIA_`` where MySQL has an event of the same meaning (as in our
fixtures' MANIFEST.json).
"""

from __future__ import annotations

__all__ = [
    "COMPRESSED_ROWS_TYPES",
    "EVENT_TYPE_NAMES",
    "FLAG_BINLOG_IN_USE",
    "FLAG_IGNORABLE",
    "ROWS_EVENT_OPS",
    "ROWS_TYPES",
    "event_type_name",
]

UNKNOWN = 0
START_V3 = 1
QUERY = 2
STOP = 3
ROTATE = 4
INTVAR = 5
LOAD = 6
SLAVE = 7
CREATE_FILE = 8
APPEND_BLOCK = 9
EXEC_LOAD = 10
DELETE_FILE = 11
NEW_LOAD = 12
RAND = 13
USER_VAR = 14
FORMAT_DESCRIPTION = 15
XID = 16
BEGIN_LOAD_QUERY = 17
EXECUTE_LOAD_QUERY = 18
TABLE_MAP = 19
PRE_GA_WRITE_ROWS = 20
PRE_GA_UPDATE_ROWS = 21
PRE_GA_DELETE_ROWS = 22
WRITE_ROWS_V1 = 23
UPDATE_ROWS_V1 = 24
DELETE_ROWS_V1 = 25
INCIDENT = 26
HEARTBEAT = 27
IGNORABLE = 28
ROWS_QUERY = 29
WRITE_ROWS_V2 = 30
UPDATE_ROWS_V2 = 31
DELETE_ROWS_V2 = 32
GTID = 33
ANONYMOUS_GTID = 34
PREVIOUS_GTIDS = 35
TRANSACTION_CONTEXT = 36
VIEW_CHANGE = 37
XA_PREPARE = 38
PARTIAL_UPDATE_ROWS = 39
TRANSACTION_PAYLOAD = 40
HEARTBEAT_V2 = 41
GTID_TAGGED = 42
MARIA_ANNOTATE_ROWS = 160
MARIA_BINLOG_CHECKPOINT = 161
MARIA_GTID = 162
MARIA_GTID_LIST = 163
MARIA_START_ENCRYPTION = 164
MARIA_QUERY_COMPRESSED = 165
MARIA_WRITE_ROWS_COMPRESSED_V1 = 166
MARIA_UPDATE_ROWS_COMPRESSED_V1 = 167
MARIA_DELETE_ROWS_COMPRESSED_V1 = 168
MARIA_WRITE_ROWS_COMPRESSED = 169
MARIA_UPDATE_ROWS_COMPRESSED = 170
MARIA_DELETE_ROWS_COMPRESSED = 171
MARIA_PARTIAL_ROW_DATA = 172

EVENT_TYPE_NAMES: dict[int, str] = {
    code: name for name, code in globals().items() if name.isupper() and isinstance(code, int) and name != "UNKNOWN"
}
EVENT_TYPE_NAMES[UNKNOWN] = "UNKNOWN"

#: Rows events and the operation they carry.
ROWS_EVENT_OPS: dict[int, str] = {
    PRE_GA_WRITE_ROWS: "insert", PRE_GA_UPDATE_ROWS: "update", PRE_GA_DELETE_ROWS: "delete",
    WRITE_ROWS_V1: "insert", UPDATE_ROWS_V1: "update", DELETE_ROWS_V1: "delete",
    WRITE_ROWS_V2: "insert", UPDATE_ROWS_V2: "update", DELETE_ROWS_V2: "delete",
    PARTIAL_UPDATE_ROWS: "update",
    MARIA_WRITE_ROWS_COMPRESSED_V1: "insert", MARIA_UPDATE_ROWS_COMPRESSED_V1: "update",
    MARIA_DELETE_ROWS_COMPRESSED_V1: "delete",
    MARIA_WRITE_ROWS_COMPRESSED: "insert", MARIA_UPDATE_ROWS_COMPRESSED: "update",
    MARIA_DELETE_ROWS_COMPRESSED: "delete",
}
ROWS_TYPES = frozenset(ROWS_EVENT_OPS)
COMPRESSED_ROWS_TYPES = frozenset(range(MARIA_WRITE_ROWS_COMPRESSED_V1, MARIA_DELETE_ROWS_COMPRESSED + 1))

#: Events that open a transaction (a split boundary candidate); a QUERY "BEGIN" is one too.
GTID_TYPES = frozenset({GTID, ANONYMOUS_GTID, GTID_TAGGED, MARIA_GTID})

# Common-header flags (LOG_EVENT_*_F).
FLAG_BINLOG_IN_USE = 0x0001
FLAG_THREAD_SPECIFIC = 0x0004
FLAG_SUPPRESS_USE = 0x0008
FLAG_ARTIFICIAL = 0x0020
FLAG_RELAY_LOG = 0x0040
FLAG_IGNORABLE = 0x0080
FLAG_SKIP_REPLICATION = 0x8000


def event_type_name(code: int) -> str:
    """The event type's name, or ``type_<code>`` for a code no server we know writes."""
    return EVENT_TYPE_NAMES.get(code, f"type_{code}")


def is_known_type(code: int) -> bool:
    """True for a code MySQL 5.0–8.4 or MariaDB 10.x–11.x defines."""
    return code in EVENT_TYPE_NAMES and code != UNKNOWN
