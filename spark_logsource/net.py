"""What the live clients share (Tarantool IPROTO, MySQL replication, memcached TAP): credentials that never
print, server URIs parsed without quoting their password back, and TCP connections whose failures name the
server and no secret.

Every error raised here is a :class:`~spark_logsource.errors.SourceError` (or the caller's subclass) naming the
credential-free ``source`` (``tarantool://host:port``, ``tap://host:port``), or an
:class:`~spark_logsource.errors.OptionError` for a bad URI; neither ever holds the password or the URI's user
information.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from spark_logsource.errors import OptionError, SourceError

__all__ = ["Secret", "ServerUri", "connect_tcp", "os_reason", "parse_server_uri", "redact_uri"]


class Secret:
    """A password that never prints: ``repr`` and ``str`` are ``'***'``; pickles as its value (for executors)."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or ""

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """``text`` (a server's or a driver's message) with the secret replaced by ``***``."""
        return text.replace(self._value, "***") if self._value else text

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __getstate__(self) -> str:
        return self._value

    def __setstate__(self, state: str) -> None:
        self._value = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class ServerUri:
    """``scheme://[user[:password]@]host[:port]`` taken apart; ``user`` and ``password`` None when absent."""

    host: str
    port: int
    user: str | None
    password: Secret | None


def redact_uri(uri: str) -> str:
    """``uri`` with any ``:password@`` part replaced by ``:***@``."""
    head, sep, tail = uri.rpartition("@")
    if not sep:
        return uri
    scheme, s2, userinfo = head.rpartition("://")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{s2}{user}:***@{tail}" if ":" in userinfo else uri


def parse_server_uri(uri: str, *, schemes: tuple[str, ...], form: str, default_port: int | None = None,
                     bare: bool = False, option: str = "uri") -> ServerUri:
    """Split a server URI whose scheme is one of ``schemes`` (OptionError saying ``expected <form>`` otherwise).

    ``bare``: a URI without ``scheme://`` is read as ``schemes[0]://uri``. ``default_port`` None: the port is
    required. A parsing error is reported by its kind only: its message could quote the password.
    """
    text = uri.strip()
    if bare and "://" not in text:
        text = f"{schemes[0]}://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port if parts.port is not None else default_port
    except ValueError as exc:
        raise OptionError(option, f"not a {form} URI ({type(exc).__name__})") from None
    if parts.scheme.lower() not in schemes or not parts.hostname or port is None:
        raise OptionError(option, f"expected {form}, got {redact_uri(uri)!r}")
    user = unquote(parts.username) if parts.username else None
    password = Secret(unquote(parts.password)) if parts.password is not None else None
    return ServerUri(parts.hostname, port, user, password)


def os_reason(exc: OSError) -> str:
    """What went wrong with a socket, as the system says it (``Connection refused``), without the address."""
    return str(exc.strerror or exc)


def connect_tcp(host: str, port: int, source: str, *, connect_timeout: float, read_timeout: float | None = None,
                error: type[SourceError] = SourceError) -> socket.socket:
    """A connected TCP socket with Nagle off (small requests and ACKs go out at once).

    ``read_timeout``: every later blocking read or send waits at most this long (None: ``connect_timeout``
    stays, for callers that wait with ``select``). A failure to connect raises ``error`` naming ``source``.
    """
    try:
        sock = socket.create_connection((host, port), timeout=connect_timeout)
    except OSError as exc:
        raise error(source, None, f"cannot connect: {os_reason(exc)}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if read_timeout is not None:
        sock.settimeout(read_timeout)
    return sock
