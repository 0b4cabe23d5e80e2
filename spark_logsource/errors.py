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


class StorageError(LogSourceError, OSError):
    """A cloud file system could not be set up or reached; the message names the path and what to set.

    ``path`` is the user's path without its query string (which may hold settings or credentials).
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


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


class DecodeError(ValueError):
    """Internal: a pure decoder met bytes it cannot decode at ``pos`` (relative to the buffer it was given).

    Decoders know buffers, not files: the framer that called them wraps this into a :class:`CorruptDataError`
    with the file path and the absolute offset (:meth:`at`). Never escapes the package. ``kind`` is the public
    class it becomes unless the framer names another.
    """

    kind: type[CorruptDataError] = CorruptDataError

    def __init__(self, pos: int | None, reason: str) -> None:
        super().__init__(reason if pos is None else f"at {pos}: {reason}")
        self.pos = pos
        self.reason = reason

    def at(self, path: str | None, base: int, cls: type[CorruptDataError] | None = None) -> CorruptDataError:
        """The public error for this failure in ``path``, whose buffer started at byte ``base`` of it."""
        return (cls or self.kind)(path, base + (self.pos or 0), self.reason)


class SourceError(LogSourceError):
    """A live source (a server) failed us: refused, closed, timed out or answered what the protocol forbids.

    ``source`` is the server as ``scheme://host:port`` with no credentials; ``position`` where reading stood
    (an offset's JSON text, a vclock, a binlog file and position), or None before any was reached.
    """

    def __init__(self, source: str, position: str | None, reason: str) -> None:
        where = source if position is None else f"{source} at {position}"
        super().__init__(f"{where}: {reason}")
        self.source = source
        self.position = position
        self.reason = reason


class UnavailableError(SourceError):
    """The server could not be reached or went away (refused, reset, closed, shutting down, still starting).

    Worth retrying: the live sources reconnect with back-off for up to their ``reconnectTimeout`` option
    (:mod:`spark_logsource.streaming.retry`) before raising it.
    """


class AuthenticationError(SourceError):
    """The server refused our user, password or privileges (the password itself is never in the message)."""


class DataLossError(LogSourceError):
    """Part of a requested range is no longer kept by the source (files collected, log purged).

    Raised unless the user set ``failOnDataLoss=false``; ``missing`` names the range that is gone.
    """

    def __init__(self, source: str, missing: str, hint: str = "set failOnDataLoss=false to continue from the "
                 "oldest position still available") -> None:
        super().__init__(f"{source}: data loss: {missing} is no longer available; {hint}")
        self.source = source
        self.missing = missing


class QueryError(LogSourceError):
    """Spark rejected a query of ``spark-logsource sql`` (a SQL typo, an unknown column or view): ``error_class``
    is Spark's (``PARSE_SYNTAX_ERROR``, ``UNRESOLVED_COLUMN``...), the message its first line."""

    def __init__(self, error_class: str | None, message: str) -> None:
        super().__init__(message if not error_class or error_class in message else f"[{error_class}] {message}")
        self.error_class = error_class


class SchemaChangeError(LogSourceError):
    """A stream of one table's typed changes (``view=table``) met a DDL that its schema, fixed when the query
    started, cannot name (a new column, a renamed column, a widened type), or one that ends the table.

    ``source`` names the directory or server (no credentials), ``position`` the statement's ``file:pos``. Every
    change before the statement is committed; restarting the query on its checkpoint reads the new layout.
    """

    def __init__(self, source: str, position: str, statement: str, reason: str,
                 hint: str = "restart the query on its checkpoint: the restarted query's schema includes the new "
                             "layout and it goes on from this statement") -> None:
        super().__init__(f"{source}: schema change at {position}: {reason}; statement: {statement[:500]!r}; {hint}")
        self.source = source
        self.position = position
        self.statement = statement
