"""Exception classes of spark-logsource.

Every error about file contents carries the file path and the byte offset where the problem was found,
so a user can open the file at that place (``xxd -s OFFSET FILE``) and a corrupt-record row can name it.
"""

from __future__ import annotations


class LogSourceError(Exception):
    """Base class of every error raised by spark-logsource."""


class OptionError(LogSourceError, ValueError):
    """A reader option has a value we cannot use; the message names the option."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"option {option!r}: {message}")
        self.option = option


class CorruptDataError(LogSourceError):
    """The bytes of a log file do not follow the format.

    ``path`` is the file as the user named it, ``offset`` the byte offset in that file of the block,
    event or field where decoding failed (``None`` only when no offset applies).
    """

    def __init__(self, path: str | None, offset: int | None, reason: str) -> None:
        where = path if path is not None else "<bytes>"
        if offset is not None:
            where = f"{where} at byte {offset}"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class TruncatedDataError(CorruptDataError):
    """The data ends inside a block, event or value."""


class ChecksumError(CorruptDataError):
    """A stored checksum does not match the bytes it covers."""


class UnsupportedDataError(CorruptDataError):
    """Well-formed data that this package cannot decode (an encrypted binlog, a v1 binlog, ...)."""


class EncryptedBinlogError(UnsupportedDataError):
    """The binlog is encrypted (MariaDB START_ENCRYPTION_EVENT): the key is not available to us."""
