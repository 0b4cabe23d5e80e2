"""FORMAT_DESCRIPTION_EVENT (type 15, at offset 4 of every v4 binlog) and the older START_EVENT_V3.

FDE body (mysql-server ``libs/mysql/binlog/event/control_events.cpp``
``Format_description_event::Format_description_event(const char *buf, ...)``; MariaDB ``sql/log_event.cc``):
binlog_version u16, server_version char[50] (NUL padded), create_timestamp u32, common_header_len u8,
post_header_len[N] (one byte per event type, type code 1 first), then — only when the writing server is
MySQL >= 5.6.1 or MariaDB >= 5.3 — checksum_alg u8 (0 OFF, 1 CRC32) and the event's CRC32, which is present
even when the algorithm is OFF.

Binlog formats v1 (MySQL 3.23, 13-byte headers) and v3 (4.0/4.1) start with START_EVENT_V3 (type 1) instead:
``binlog_version u16, server_version char[50], created u32``. We recognise them by that type code at the same
header position and reject them with :class:`UnsupportedDataError` (decided: no real server of the supported
range writes them, and their event layouts differ from v4 in every post-header).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_logsource.errors import CorruptDataError, TruncatedDataError, UnsupportedDataError
from spark_logsource.mysql.binlog.checksum import CHECKSUM_ALG_CRC32, CHECKSUM_ALG_OFF, CRC_LEN
from spark_logsource.mysql.binlog.event_types import FORMAT_DESCRIPTION, START_V3
from spark_logsource.mysql.binlog.header import HEADER_LEN, parse_header

__all__ = ["BINLOG_MAGIC", "FormatDescription", "decode_fde", "detect_old_format", "server_has_checksum_byte"]

BINLOG_MAGIC = b"\xfebin"
_FIXED_BODY = 2 + 50 + 4 + 1  # version, server_version, create_ts, common_header_len
_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")
#: A sane maximum for the FDE: the largest post-header table we know has 171 entries.
MAX_FDE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """What the FDE tells about the rest of the file."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    common_header_len: int
    post_header_lens: bytes
    checksum_alg: int  # CHECKSUM_ALG_OFF when the server predates the checksum byte
    size: int  # event_size of the FDE itself

    @property
    def has_checksums(self) -> bool:
        return self.checksum_alg == CHECKSUM_ALG_CRC32

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    def post_header_len(self, type_code: int, default: int) -> int:
        """post_header_len[type_code - 1], or ``default`` for a type beyond the table."""
        index = type_code - 1
        if 0 <= index < len(self.post_header_lens):
            return self.post_header_lens[index]
        return default

    def as_dict(self) -> dict[str, object]:
        return {
            "binlog_version": self.binlog_version,
            "server_version": self.server_version,
            "create_timestamp": self.create_timestamp,
            "common_header_len": self.common_header_len,
            "post_header_lens": list(self.post_header_lens),
            "checksum_alg": self.checksum_alg,
        }


def server_has_checksum_byte(server_version: str) -> bool:
    """MySQL >= 5.6.1 and MariaDB >= 5.3 write the checksum_alg byte (mysql-server ``checksum_alg`` docs)."""
    match = _VERSION_RE.match(server_version)
    if not match:
        return False
    version = tuple(int(g) for g in match.groups())
    if "mariadb" in server_version.lower():
        return version >= (5, 3, 0)
    return version >= (5, 6, 1)


def detect_old_format(head: bytes, path: str | None) -> None:
    """Raise UnsupportedDataError when the file is a v1/v3 binlog (START_EVENT_V3 at offset 4).

    ``head`` is the file's first bytes (at least 4 + 19 when available). In v1 (13-byte headers) and v3
    (19-byte headers) the type byte is at offset 4 of the event like in v4, and is 1 (START_EVENT_V3).
    """
    if len(head) >= 4 + 5 and head[4 + 4] == START_V3:
        version = int.from_bytes(head[4 + 13:4 + 15], "little") if len(head) >= 4 + 15 else None
        size = int.from_bytes(head[4 + 9:4 + 13], "little")
        kind = "v1 (MySQL 3.23)" if size == 13 + 56 else "v3 (MySQL 4.x)"
        if version is not None and size == 19 + 56:
            version = int.from_bytes(head[4 + 19:4 + 21], "little")
        raise UnsupportedDataError(path, 4, f"binlog format {kind} (START_EVENT_V3, binlog_version={version}) "
                                            "is not supported: only v4 binlogs (MySQL 5.0+, MariaDB) are read")


def decode_fde(event: bytes, *, path: str | None, offset: int = 4) -> FormatDescription:
    """Decode a whole FDE (header + body + trailer as in the file)."""
    if len(event) < HEADER_LEN + _FIXED_BODY:
        raise TruncatedDataError(path, offset, f"FORMAT_DESCRIPTION_EVENT of {len(event)} bytes is too short")
    header = parse_header(event)
    if header.type_code != FORMAT_DESCRIPTION:
        raise CorruptDataError(path, offset, f"expected a FORMAT_DESCRIPTION_EVENT at offset 4, found event type "
                                             f"{header.type_code}")
    body = event[HEADER_LEN:header.event_size]
    binlog_version = int.from_bytes(body[0:2], "little")
    if binlog_version != 4:
        raise UnsupportedDataError(path, offset, f"binlog_version {binlog_version} in the FDE (only 4 is read)")
    server_version = body[2:52].split(b"\0", 1)[0].decode("ascii", "replace")
    create_ts = int.from_bytes(body[52:56], "little")
    common_header_len = body[56]
    if common_header_len != HEADER_LEN:
        raise UnsupportedDataError(path, offset, f"common header length {common_header_len} (only 19 is read)")
    rest = body[_FIXED_BODY:]
    if server_has_checksum_byte(server_version):
        if len(rest) < 1 + CRC_LEN:
            raise TruncatedDataError(path, offset, "FDE has no room for its checksum_alg byte and CRC")
        post_header_lens = bytes(rest[:-(1 + CRC_LEN)])
        checksum_alg = rest[-(1 + CRC_LEN)]
        if checksum_alg not in (CHECKSUM_ALG_OFF, CHECKSUM_ALG_CRC32):
            raise UnsupportedDataError(path, offset, f"checksum algorithm {checksum_alg} (only OFF and CRC32)")
    else:
        post_header_lens = bytes(rest)
        checksum_alg = CHECKSUM_ALG_OFF
    return FormatDescription(binlog_version, server_version, create_ts, common_header_len, post_header_lens,
                             checksum_alg, header.event_size)
