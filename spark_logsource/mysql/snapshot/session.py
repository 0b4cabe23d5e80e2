"""Client sessions of the snapshot: a pymysql connection that hands values over as the server's text (or bytes),
and our errors for what the server refuses (``docs/formats/mysql-snapshot.md``).

Values are not converted by pymysql: :mod:`.values` turns the server's text into the values the binlog decoder
gives, so that ``view=table``'s one conversion (``mysql/table/layout.py``) types them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spark_logsource.errors import AuthenticationError, OptionError, SourceError
from spark_logsource.mysql.stream.client import ConnectionSettings, ReplicationClient
from spark_logsource.mysql.stream.connection import connect

__all__ = ["ER_NO_SUCH_TABLE", "ER_TABLEACCESS_DENIED", "Session", "open_session", "quote"]

log = logging.getLogger(__name__)

ER_TABLEACCESS_DENIED = 1142
ER_COLUMNACCESS_DENIED = 1143
ER_NO_SUCH_TABLE = 1146
ER_BAD_DB = 1049
#: A streamed SELECT is one long answer: the server may think for a while before the first row of a chunk.
SELECT_TIMEOUT = 600.0


def quote(name: str) -> str:
    """An identifier in backquotes (a backquote inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


class Session:
    """One connection, its statements, and errors that name the server and the table (never the password)."""

    def __init__(self, settings: ConnectionSettings, table: str, conn: Any) -> None:
        self.settings = settings
        self.table = table
        self.conn = conn

    def error(self, exc: BaseException, doing: str, position: str | None = None) -> SourceError:
        args: tuple[Any, ...] = getattr(exc, "args", ())
        code = args[0] if args and isinstance(args[0], int) else None
        source = self.settings.source
        if code in (ER_TABLEACCESS_DENIED, ER_COLUMNACCESS_DENIED):
            message = self.settings.password.redact(str(args[1]) if len(args) > 1 else str(exc))
            return AuthenticationError(source, position, f"{doing}: the user {self.settings.user!r} may not read "
                                                         f"{self.table} ({message}, error {code}): GRANT SELECT "
                                                         f"ON {self.table} TO it")
        if code in (ER_NO_SUCH_TABLE, ER_BAD_DB):
            return SourceError(source, position, f"{doing}: the table {self.table} does not exist (error {code})")
        error = ReplicationClient(self.settings).error(exc, position, f"{doing} ({self.table})")
        if isinstance(error, SourceError):
            return error
        return SourceError(source, position, str(error))

    def query(self, sql: str, *params: Any, doing: str | None = None) -> list[tuple[Any, ...]]:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params or None)
                return list(cur.fetchall())
        except Exception as exc:
            raise self.error(exc, doing or " ".join(sql.split()[:2])) from None

    def stream(self, sql: str, *params: Any, doing: str) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` as the server sends them (an unbuffered cursor: a chunk is never held twice)."""
        import pymysql.cursors

        try:
            with self.conn.cursor(pymysql.cursors.SSCursor) as cur:
                cur.execute(sql, params or None)
                while True:
                    rows = cur.fetchmany(1000)
                    if not rows:
                        return
                    yield from rows
        except Exception as exc:
            raise self.error(exc, doing) from None

    def snapshot_position(self) -> tuple[str, int]:
        """``START TRANSACTION WITH CONSISTENT SNAPSHOT`` and the binlog position it sees (MariaDB's
        ``binlog_snapshot_file`` / ``_position``): no lock is taken."""
        self.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = {str(k).lower(): v for k, v in self.query("SHOW STATUS LIKE 'binlog_snapshot_%'")}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        if not file or pos is None:
            raise SourceError(self.settings.source, None, "the server tells no binlog_snapshot_file: the snapshot "
                                                          "needs MariaDB with binary logging on (MySQL has no "
                                                          "such status variables)")
        return _text(file), int(_text(pos))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@contextmanager
def open_session(settings: ConnectionSettings, table: str, *, raw: bool = True) -> Iterator[Session]:
    """A session whose values arrive as text (str) or, for binary columns, bytes; time zone UTC."""
    try:
        import pymysql.converters
    except ImportError:  # pragma: no cover - an optional extra
        raise OptionError("uri", "the snapshot needs pymysql: pip install 'spark-logsource[live]'") from None
    # the encoders (Python → SQL literals) stay; no decoder: every value comes as the server's text
    encoders = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}
    s = settings
    try:
        conn = connect(host=s.host, port=s.port, user=s.user, password=s.password.reveal(),
                       connect_timeout=s.connect_timeout, read_timeout=max(s.read_timeout, SELECT_TIMEOUT),
                       write_timeout=max(s.read_timeout, SELECT_TIMEOUT), autocommit=True, charset="utf8mb4",
                       **({"conv": encoders} if raw else {}))
    except Exception as exc:
        raise ReplicationClient(settings).error(exc, None, "cannot connect") from None
    session = Session(settings, table, conn)
    try:
        # TIMESTAMP values as UTC (the binlog holds them so)
        session.query("SET SESSION time_zone = '+00:00'")
        yield session
    finally:
        try:
            conn.close()
        except Exception:
            log.debug("closing %s", settings.source, exc_info=True)
