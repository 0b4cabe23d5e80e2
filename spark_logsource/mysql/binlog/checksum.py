"""Binlog event checksums (``binlog_checksum=CRC32``).

mysql-server ``libs/mysql/binlog/event/binlog_event.cpp`` ``Log_event_footer::event_checksum_test``: the
trailer is CRC-32 (zlib/IEEE polynomial) of the event bytes before it, stored little-endian. The
FORMAT_DESCRIPTION_EVENT of a file still being written has the LOG_EVENT_BINLOG_IN_USE_F flag (0x01) set in
the file, but its CRC was computed with that flag clear, so the check clears it first.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from spark_logsource.mysql.binlog.event_types import FLAG_BINLOG_IN_USE, FORMAT_DESCRIPTION
from spark_logsource.native import load_kernel

__all__ = ["CHECKSUM_ALG_CRC32", "CHECKSUM_ALG_OFF", "CHECKSUM_ALG_UNDEF", "CRC_LEN", "crc32", "event_crc_ok"]

CHECKSUM_ALG_OFF = 0
CHECKSUM_ALG_CRC32 = 1
CHECKSUM_ALG_UNDEF = 255
CRC_LEN = 4

_FLAGS_OFFSET = 17  # flags u16 at bytes 17-18 of the common header
_TYPE_OFFSET = 4


def _fastest_crc32() -> Callable[..., int]:
    """``zlib.crc32``, or the kernel's twin where it folds with PCLMULQDQ (about 3x faster on events of kilobytes;
    ``_native/_crc32.h``, ``docs/formats/mysql-binlog.md`` "Checksums")."""
    kernel: Any = load_kernel("spark_logsource.mysql._kernel")
    folds = getattr(kernel, "crc32_folds", None)  # None: no kernel, or one built before it had the function
    return kernel.crc32 if folds is not None and folds() else zlib.crc32


#: ``crc32(data, value=0)``: zlib's CRC-32, as every check of an event's trailer computes it.
crc32 = _fastest_crc32()


def stored_crc(event: bytes | memoryview) -> int:
    """The little-endian CRC32 trailer of a whole event."""
    return int.from_bytes(event[-CRC_LEN:], "little")


def computed_crc(event: bytes | memoryview) -> int:
    """CRC32 of the event bytes before the trailer, with the FDE's in-use flag cleared."""
    if event[_TYPE_OFFSET] == FORMAT_DESCRIPTION and event[_FLAGS_OFFSET] & FLAG_BINLOG_IN_USE:
        crc = crc32(event[:_FLAGS_OFFSET])
        crc = crc32(bytes([event[_FLAGS_OFFSET] & ~FLAG_BINLOG_IN_USE & 0xFF]), crc)
        return crc32(event[_FLAGS_OFFSET + 1:-CRC_LEN], crc)
    return crc32(event[:-CRC_LEN])


def event_crc_ok(event: bytes | memoryview) -> bool:
    """True when the whole event's CRC32 trailer matches its bytes."""
    return len(event) > CRC_LEN and computed_crc(event) == stored_crc(event)
