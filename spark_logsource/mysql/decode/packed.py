"""Small byte readers shared by the MySQL binlog decoders, and the error they raise.

Length-encoded ("packed") integers follow the MySQL client/server protocol and binlog rules
(mysql-server ``libs/mysql/binlog/event/binary_log_funcs.cpp`` ``net_field_length_ll``): a first byte
< 251 is the value itself; 252 is followed by a u16, 253 by a u24, 254 by a u64 (all little-endian).
251 means NULL in result sets and is read here as 0-length (it never occurs in binlog lengths);
255 is not valid.

The decoders know buffers, not files (``docs/ARCHITECTURE.md``): they raise :class:`BinlogDecodeError` with a
position relative to the buffer they were given, and the framer or reader that knows the file and the buffer's
offset in it turns it into the public error (:meth:`BinlogDecodeError.at`, which names ``kind``).
"""

from __future__ import annotations

from spark_logsource.errors import CorruptDataError, DecodeError, TruncatedDataError

__all__ = ["BinlogDecodeError", "read_packed_int", "read_uint_le", "require"]

_PACKED_WIDTH = {252: 2, 253: 3, 254: 8}


class BinlogDecodeError(DecodeError):
    """A :class:`DecodeError` that names the public error it becomes (``kind``: truncated data, corrupt data,
    data this package cannot decode, an encrypted binlog). ``pos`` may be negative: ``-19`` is the start of the
    event whose body the decoder was given (the errors that concern the event as a whole point there)."""

    def __init__(self, pos: int | None, reason: str, kind: type[CorruptDataError] = CorruptDataError) -> None:
        super().__init__(pos, reason)
        self.kind = kind

    @classmethod
    def of(cls, error: CorruptDataError) -> BinlogDecodeError:
        """``error`` from a helper that was given no file and the buffer's offset 0 (the framing's
        decompressors), as a decoder's error at the same place."""
        return cls(error.offset, error.reason, type(error))


def require(buf: bytes | memoryview, pos: int, size: int, *, what: str = "value") -> None:
    """Raise a truncation unless ``size`` bytes are available at ``pos`` in ``buf``."""
    if size < 0 or pos + size > len(buf):
        raise BinlogDecodeError(pos, f"{what} needs {size} bytes, only {max(len(buf) - pos, 0)} left",
                                TruncatedDataError)


def read_packed_int(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a length-encoded integer at ``pos``; return ``(value, position after it)``."""
    if pos >= len(buf):
        raise BinlogDecodeError(pos, "packed integer past the end of the data", TruncatedDataError)
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 251:
        return 0, pos + 1
    width = _PACKED_WIDTH.get(first)
    if width is None:
        raise BinlogDecodeError(pos, f"invalid packed integer prefix 0x{first:02x}")
    end = pos + 1 + width
    if end > len(buf):
        raise BinlogDecodeError(pos, f"packed integer needs {width + 1} bytes", TruncatedDataError)
    return int.from_bytes(buf[pos + 1:end], "little"), end


def read_uint_le(buf: bytes | memoryview, pos: int, size: int) -> tuple[int, int]:
    """Read a ``size``-byte little-endian unsigned integer at ``pos``; return ``(value, new pos)``."""
    end = pos + size
    if end > len(buf):
        raise BinlogDecodeError(pos, f"{size}-byte integer past the end of the data", TruncatedDataError)
    return int.from_bytes(buf[pos:end], "little"), end
