"""Bounded decompression of binlog payloads: MariaDB zlib events and MySQL 8 zstd transaction payloads.

MariaDB (``sql/log_event.cc`` ``binlog_buf_compress`` / ``binlog_buf_uncompress``, used by QUERY_COMPRESSED and
the compressed rows events when ``log_bin_compress=ON``): one header byte ``0x80 | alg << 4 | n`` (alg 0 =
zlib; n = 1..4), the uncompressed length in n bytes big-endian, then a zlib stream.

MySQL 8.0.20+ TRANSACTION_PAYLOAD (``libs/mysql/binlog/event/compression/zstd_dec.cpp``): a zstd frame.

Every decompression has an explicit maximum output size; a payload that would inflate beyond it, or beyond
what its header declares, raises :class:`CorruptDataError` instead of allocating.
"""

from __future__ import annotations

from spark_logsource.errors import CorruptDataError, DecodeError, TruncatedDataError, UnsupportedDataError
from spark_logsource.io.compression import zlib_exact, zstd_frames

__all__ = ["DEFAULT_MAX_UNCOMPRESSED", "mariadb_uncompress", "zstd_uncompress"]

#: Default cap on one decompressed payload: MySQL's max_allowed_packet maximum (1 GiB).
DEFAULT_MAX_UNCOMPRESSED = 1 << 30


def mariadb_uncompress(data: bytes | memoryview, path: str | None, offset: int,
                       max_size: int = DEFAULT_MAX_UNCOMPRESSED) -> bytes:
    """Uncompress a MariaDB compressed block that starts at ``data[0]`` (file offset ``offset``)."""
    if len(data) < 1:
        raise TruncatedDataError(path, offset, "compressed block has no header byte")
    head = data[0]
    if not head & 0x80:
        raise CorruptDataError(path, offset, f"compressed block header 0x{head:02x} lacks the 0x80 marker")
    alg = (head >> 4) & 0x07
    width = head & 0x07
    if alg != 0:
        raise UnsupportedDataError(path, offset, f"MariaDB compression algorithm {alg} (only 0, zlib)")
    if not 1 <= width <= 4:
        raise CorruptDataError(path, offset, f"compressed block length width {width} (1 to 4)")
    if len(data) < 1 + width:
        raise TruncatedDataError(path, offset, "compressed block ends inside its length")
    declared = int.from_bytes(data[1:1 + width], "big")
    if declared > max_size:
        raise CorruptDataError(path, offset, f"compressed block declares {declared} bytes, over the cap {max_size}")
    try:
        return zlib_exact(data[1 + width:], declared)
    except DecodeError as exc:
        raise exc.at(path, offset) from None


def zstd_uncompress(data: bytes | memoryview, path: str | None, offset: int, max_size: int,
                    expected_size: int | None = None) -> bytes:
    """Decompress zstd frames, refusing more than ``max_size`` bytes of output.

    A truncated frame makes the zstandard stream reader stop early without an error, so the output length is
    checked against ``expected_size`` (the payload's declared UNCOMPRESSED_SIZE) when the caller knows it.
    """
    try:
        return zstd_frames(data, max_size, expected_size)
    except DecodeError as exc:
        raise exc.at(path, offset) from None
