"""Opening a client connection to a MySQL / MariaDB server (pymysql), with one TLS context per process.

With no TLS option, pymysql connects in PREFERRED mode: it offers TLS when the server has it and falls back to a
plain connection when it has not. For that it builds a fresh ``ssl.create_default_context()`` for every
connection, and that loads the system's CA bundle: about 30 ms of CPU each time. A stream opens connections on the
driver at every micro-batch and in every task, and a busy query spends more time loading certificates than
reading events. Here the context pymysql builds for the first connection is kept and handed to the following
ones: the same settings (pymysql's own), loaded once. An ``SSLContext`` may be shared by connections and threads.
"""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import OptionError, SourceError, UnavailableError
from spark_logsource.net import Secret, connect_tcp
from spark_logsource.streaming.retry import Reconnect

__all__ = ["HANDSHAKE_V10", "ConnectionSettings", "connect", "greeting_problem", "parse_uri"]

#: A MySQL / MariaDB server's first packet: 3-byte length, sequence 0, protocol version 10.
HANDSHAKE_V10 = 10

_lock = threading.Lock()
_preferred_context: ssl.SSLContext | None = None
_connection_class: type | None = None


def _shared_connection_class() -> type:
    """pymysql's ``Connection`` whose PREFERRED-mode TLS context (built from no options) is made once."""
    global _connection_class
    if _connection_class is not None:
        return _connection_class
    import pymysql.connections

    base = pymysql.connections.Connection

    class SharedTlsConnection(base):  # type: ignore[misc, valid-type]
        def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
            global _preferred_context
            if sslp or not isinstance(sslp, dict):
                own: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # explicit options: pymysql's own handling
                return own
            with _lock:
                if _preferred_context is None:
                    _preferred_context = super()._create_ssl_ctx(sslp)
                return _preferred_context

    _connection_class = SharedTlsConnection
    return SharedTlsConnection


def connect(**kwargs: Any) -> Any:
    """``pymysql.connect(**kwargs)``, sharing the PREFERRED-mode TLS context between connections."""
    return _shared_connection_class()(**kwargs)


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Where and as whom to connect; ``source`` is ``mysql://host:port`` (no user, no password) for messages."""

    host: str
    port: int
    user: str
    password: Secret = field(repr=False)
    connect_timeout: float = 10.0
    heartbeat_period: float = 1.0
    #: how long a lost or refused connection is retried (``reconnectTimeout``)
    reconnect: Reconnect = field(default_factory=Reconnect)

    @property
    def source(self) -> str:
        return f"mysql://{self.host}:{self.port}"

    @property
    def read_timeout(self) -> float:
        """Three heartbeat periods: a server that says nothing for that long is gone."""
        return max(3 * self.heartbeat_period, 5.0)


def parse_uri(uri: str | None, password: str | None, *, heartbeat_period: float = 1.0,
              connect_timeout: float = 10.0, reconnect: Reconnect | None = None) -> ConnectionSettings:
    """``mysql://user@host:port`` (port 3306 by default). A password in the URI is refused: use ``password``."""
    if not uri:
        raise OptionError("uri", "the server to replicate from is required: mysql://user@host:3306")
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.lower() not in ("mysql", "mariadb"):
        raise OptionError("uri", "expected mysql://user@host:port")
    rest = rest.split("/", 1)[0]
    userinfo, at, hostport = rest.rpartition("@")
    if not at or not userinfo:
        raise OptionError("uri", "expected mysql://user@host:port (the user is missing)")
    if ":" in userinfo:
        raise OptionError("uri", "put the password in the password option, not in the URI")
    host, colon, port_text = hostport.rpartition(":")
    if not colon:
        host, port_text = hostport, "3306"
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise OptionError("uri", f"bad port {port_text!r}") from None
    if not host or not 0 < port < 65536:
        raise OptionError("uri", "expected mysql://user@host:port")
    return ConnectionSettings(host, port, userinfo, Secret(password), connect_timeout, heartbeat_period,
                              reconnect or Reconnect())


def greeting_problem(s: ConnectionSettings) -> SourceError | None:
    """Why the server's port does not speak MySQL (a Tarantool greeting, other bytes, silence), or None.

    Asked only after a failed handshake, on a connection of its own: pymysql reports a foreign greeting as a
    packet sequence error, and silence as a lost connection.
    """
    where = f"{s.host}:{s.port}"
    try:
        sock = connect_tcp(s.host, s.port, s.source, connect_timeout=s.connect_timeout,
                           read_timeout=s.connect_timeout, error=UnavailableError)
    except UnavailableError as exc:
        return exc
    try:
        with sock:
            head = sock.recv(64)
    except TimeoutError:
        return SourceError(s.source, None, f"no greeting within {s.connect_timeout:g} s from {where}: not a "
                                           "MySQL/MariaDB port, or the server is hung (connectTimeout)")
    except OSError:
        return None  # reset: the server is going away; the handshake's own error says so
    if not head:
        return None  # closed at once: a server starting or stopping; the handshake's own error says so
    if head.startswith(b"Tarantool"):
        return SourceError(s.source, None, f"{where} is not a MySQL/MariaDB server: it greeted as Tarantool "
                                           "(read it with tarantool-replication)")
    if len(head) > 4 and head[3] == 0 and head[4] in (HANDSHAKE_V10, 0xFF):
        return None  # a MySQL greeting (or its error packet): the handshake's own error says what failed
    shown = head[:24].decode("ascii", "replace").strip()
    return SourceError(s.source, None, f"{where} is not a MySQL/MariaDB server: its greeting starts {shown!r}")
