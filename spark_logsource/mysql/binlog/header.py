"""The v4 common event header (19 bytes) of every binlog event.

Layout (mysql-server ``libs/mysql/binlog/event/binlog_event.h`` ``Log_event_header``; MariaDB
``sql/log_event.h``), all little-endian: timestamp u32, type_code u8, server_id u32, event_size u32 (the
whole event, header and CRC trailer included), log_pos u32 (offset of the NEXT event in the file; 0 inside a
TRANSACTION_PAYLOAD and for MariaDB 11 in-transaction events), flags u16.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["HEADER_LEN", "EventHeader", "parse_header"]

HEADER_LEN = 19
_HEADER = struct.Struct("<IBIIIH")


@dataclass(frozen=True, slots=True)
class EventHeader:
    """A decoded common header."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int


def parse_header(buf: bytes | memoryview, pos: int = 0) -> EventHeader:
    """Decode the 19-byte header at ``pos`` (the caller checks that 19 bytes are there)."""
    return EventHeader(*_HEADER.unpack_from(buf, pos))


unpack_header = _HEADER.unpack_from
