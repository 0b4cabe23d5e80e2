"""Small byte readers shared by the MySQL binlog decoders.

Length-encoded ("packed") integers follow the MySQL client/server protocol and binlog rules
(mysql-server ``libs/mysql/binlog/event/binary_log_funcs.cpp`` ``net_field_length_ll``): a first byte
< 251 is the value itself; 252 is followed by a u16, 253 by a u24, 254 by a u64 (all little-endian).
251 means NULL in result sets and is read here as 0-length (it never occurs in binlog lengths);
255 is not valid.
"""

from __future__ import annotations

from spark_logsource.errors import CorruptDataError, TruncatedDataError

__all__ = ["read_packed_int", "read_uint_le", "require"]

_PACKED_WIDTH = {252: 2, 253: 3, 254: 8}


def require(buf: bytes | memoryview, pos: int, size: int, *, path: str | None = None,
            offset: int = 0, what: str = "value") -> None:
    """Raise TruncatedDataError unless ``size`` bytes are available at ``pos`` in ``buf``."""
    if size < 0 or pos + size > len(buf):
        raise TruncatedDataError(path, offset + pos,
                                 f"{what} needs {size} bytes, only {max(len(buf) - pos, 0)} left")


def read_packed_int(buf: bytes | memoryview, pos: int, *, path: str | None = None,
                    offset: int = 0) -> tuple[int, int]:
    """Read a length-encoded integer at ``pos``; return ``(value, position after it)``.

    ``offset`` is the file offset of ``buf[0]``, used in error messages together with ``path``.
    """
    if pos >= len(buf):
        raise TruncatedDataError(path, offset + pos, "packed integer past the end of the data")
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 251:
        return 0, pos + 1
    width = _PACKED_WIDTH.get(first)
    if width is None:
        raise CorruptDataError(path, offset + pos, f"invalid packed integer prefix 0x{first:02x}")
    end = pos + 1 + width
    if end > len(buf):
        raise TruncatedDataError(path, offset + pos, f"packed integer needs {width + 1} bytes")
    return int.from_bytes(buf[pos + 1:end], "little"), end


def read_uint_le(buf: bytes | memoryview, pos: int, size: int, *, path: str | None = None,
                 offset: int = 0) -> tuple[int, int]:
    """Read a ``size``-byte little-endian unsigned integer at ``pos``; return ``(value, new pos)``."""
    end = pos + size
    if end > len(buf):
        raise TruncatedDataError(path, offset + pos, f"{size}-byte integer past the end of the data")
    return int.from_bytes(buf[pos:end], "little"), end
