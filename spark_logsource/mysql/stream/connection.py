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
from typing import Any

__all__ = ["connect"]

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
