"""Client connections share pymysql's PREFERRED-mode TLS context: built once per process, with pymysql's own
settings; explicit TLS options still get a context of their own."""

from __future__ import annotations

import ssl

import pymysql
import pytest

from spark_logsource.mysql.stream import connection
from spark_logsource.mysql.stream.client import ReplicationClient, parse_uri
from tests.mysql_stream.conftest import CDC_PASSWORD


def _deferred(**more) -> pymysql.connections.Connection:
    return connection.connect(host="127.0.0.1", port=1, user="u", defer_connect=True, **more)


def test_the_preferred_context_is_built_once_with_pymysqls_settings(monkeypatch) -> None:
    monkeypatch.setattr(connection, "_preferred_context", None)
    made = []
    real = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: made.append(1) or real(*a, **k))
    first, second, third = _deferred(), _deferred(), _deferred()
    assert len(made) == 1
    assert first.ctx is second.ctx is third.ctx
    own = pymysql.connect(host="127.0.0.1", port=1, user="u", defer_connect=True).ctx  # pymysql's, unshared
    assert len(made) == 2 and own is not first.ctx
    for attribute in ("verify_mode", "check_hostname", "options", "minimum_version", "maximum_version",
                      "verify_flags"):
        assert getattr(first.ctx, attribute) == getattr(own, attribute), attribute
    assert first.ssl and not first._ssl_required  # still PREFERRED: TLS when the server offers it


def test_explicit_tls_options_are_not_shared() -> None:
    shared = _deferred().ctx
    required = _deferred(ssl={"verify_mode": "required"})
    assert required.ctx is not shared
    assert required.ctx.verify_mode == ssl.CERT_REQUIRED and required._ssl_required
    disabled = _deferred(ssl_disabled=True)
    assert not disabled.ssl


@pytest.mark.server
def test_connections_to_a_real_server_share_the_context(stream_server) -> None:
    settings = parse_uri(stream_server.uri, CDC_PASSWORD)
    with ReplicationClient(settings) as a, ReplicationClient(settings) as b:
        assert a.binary_logs() == b.binary_logs() and a.binary_logs()
        assert a._conn.ctx is b._conn.ctx is connection._preferred_context
