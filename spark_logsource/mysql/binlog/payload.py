"""MySQL 8.0.20+ TRANSACTION_PAYLOAD_EVENT (type 40): a compressed run of ordinary events.

Layout (mysql-server ``libs/mysql/binlog/event/control_events.cpp`` ``Transaction_payload_event``): a header of
TLV fields, each ``type``, ``length`` and value as packed integers (``net_field_length_ll``), ended by type 0:
1 PAYLOAD_SIZE, 2 COMPRESSION_TYPE (0 ZSTD, 255 NONE), 3 UNCOMPRESSED_SIZE; then ``PAYLOAD_SIZE`` bytes of
payload. Uncompressed, the payload is a sequence of whole events with 19-byte common headers, no CRC trailer
and log_pos 0 (``binlog_transaction_compression`` docs).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import CorruptDataError, TruncatedDataError, UnsupportedDataError
from spark_logsource.mysql.binlog.compression import zstd_uncompress
from spark_logsource.mysql.binlog.header import HEADER_LEN, unpack_header
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int

__all__ = ["TransactionPayload", "decode_payload_header", "iter_payload_events", "uncompress_payload"]

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
_FIELD_END = 0
_FIELD_PAYLOAD_SIZE = 1
_FIELD_COMPRESSION_TYPE = 2
_FIELD_UNCOMPRESSED_SIZE = 3


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    compression_type: int
    payload_size: int
    uncompressed_size: int | None
    payload_start: int  # position of the payload inside the body


def decode_payload_header(body: bytes, *, path: str | None, offset: int) -> TransactionPayload:
    """Read the TLV header; ``offset`` is the file offset of ``body[0]``."""
    pos = 0
    fields: dict[int, int] = {}
    while True:
        if pos >= len(body):
            raise TruncatedDataError(path, offset + pos, "TRANSACTION_PAYLOAD header has no end mark")
        try:
            field_type, pos = read_packed_int(body, pos)
            if field_type == _FIELD_END:
                break
            length, pos = read_packed_int(body, pos)
        except BinlogDecodeError as exc:
            raise exc.at(path, offset) from None
        if pos + length > len(body):
            raise TruncatedDataError(path, offset + pos, f"TRANSACTION_PAYLOAD header field {field_type} needs "
                                                         f"{length} bytes")
        try:
            value, _ = read_packed_int(body[pos:pos + length], 0)
        except BinlogDecodeError as exc:
            raise exc.at(path, offset + pos) from None
        fields[field_type] = value
        pos += length
    payload_size = fields.get(_FIELD_PAYLOAD_SIZE, len(body) - pos)
    if payload_size > len(body) - pos:
        raise TruncatedDataError(path, offset + pos, f"TRANSACTION_PAYLOAD declares {payload_size} payload bytes, "
                                                     f"{len(body) - pos} present")
    return TransactionPayload(fields.get(_FIELD_COMPRESSION_TYPE, COMPRESSION_NONE), payload_size,
                              fields.get(_FIELD_UNCOMPRESSED_SIZE), pos)


def uncompress_payload(body: bytes, header: TransactionPayload, *, path: str | None, offset: int,
                       max_size: int) -> bytes:
    """The payload's events as bytes (decompressed with at most ``max_size`` bytes of output)."""
    data = body[header.payload_start:header.payload_start + header.payload_size]
    if header.compression_type == COMPRESSION_NONE:
        return bytes(data)
    if header.compression_type != COMPRESSION_ZSTD:
        raise UnsupportedDataError(path, offset, f"TRANSACTION_PAYLOAD compression type {header.compression_type}")
    return zstd_uncompress(data, path, offset + header.payload_start, max_size, header.uncompressed_size)


def iter_payload_events(payload: bytes, *, path: str | None, offset: int) -> Iterator[tuple[tuple[Any, ...], bytes]]:
    """Yield ``(header_tuple, body)`` for each inner event (no CRC); ``offset`` is the payload event's offset."""
    pos = 0
    index = 0
    while pos < len(payload):
        if pos + HEADER_LEN > len(payload):
            raise TruncatedDataError(path, offset, f"inner event {index} of TRANSACTION_PAYLOAD: header cut at "
                                                   f"payload byte {pos}")
        header = unpack_header(payload, pos)
        size = header[3]
        if size < HEADER_LEN or pos + size > len(payload):
            raise CorruptDataError(path, offset, f"inner event {index} of TRANSACTION_PAYLOAD has size {size} "
                                                 f"(payload byte {pos}, {len(payload) - pos} left)")
        yield header, payload[pos + HEADER_LEN:pos + size]
        pos += size
        index += 1
