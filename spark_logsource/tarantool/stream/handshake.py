"""What a Tarantool connection exchanges before its first request: where the server is and as whom we log in,
the 128-byte greeting, and the chap-sha1 scramble of the password (``docs/formats/tarantool-replication.md``).

The password stays in a :class:`~spark_logsource.net.Secret` until :func:`scramble` turns it into the bytes AUTH
sends; nothing here logs or names it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from spark_logsource.errors import SourceError
from spark_logsource.net import Secret, parse_server_uri

__all__ = ["GREETING_SIZE", "SCRAMBLE_SIZE", "Endpoint", "Greeting", "parse_greeting", "scramble"]

GREETING_SIZE = 128
SCRAMBLE_SIZE = 20


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the server listens and as whom we log in; :attr:`display` is the URI without credentials."""

    host: str
    port: int
    user: str = "guest"

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tarantool://{host}:{self.port}"

    @classmethod
    def parse(cls, uri: str, option: str = "uri") -> tuple[Endpoint, Secret | None]:
        """``tarantool://user[:password]@host:port`` → (endpoint, password in the URI or None)."""
        parts = parse_server_uri(uri, schemes=("tarantool", "tcp"), form="tarantool://user@host:port", bare=True,
                                 option=option)
        return cls(parts.host, parts.port, parts.user or "guest"), parts.password


def scramble(salt: bytes, password: str) -> bytes:
    """chap-sha1: ``sha1(pw) XOR sha1(salt[:20] + sha1(sha1(pw)))``."""
    hash1 = hashlib.sha1(password.encode()).digest()
    hash2 = hashlib.sha1(hash1).digest()
    hash3 = hashlib.sha1(salt[:SCRAMBLE_SIZE] + hash2).digest()
    return bytes(a ^ b for a, b in zip(hash1, hash3, strict=True))


@dataclass(frozen=True, slots=True)
class Greeting:
    version: str
    instance_uuid: str | None
    salt: bytes


def parse_greeting(data: bytes, source: str) -> Greeting:
    """The 128-byte greeting: ``Tarantool <version> (Binary) <uuid>`` and a base64 salt line."""
    if len(data) != GREETING_SIZE or data[63:64] != b"\n" or data[127:128] != b"\n":
        raise SourceError(source, None, "not a Tarantool server: the first 128 bytes are not an IPROTO greeting")
    line1 = data[:63].decode("ascii", "replace").strip()
    words = line1.split()
    if len(words) < 2 or words[0] != "Tarantool":
        raise SourceError(source, None, f"not a Tarantool server: greeting starts {line1[:40]!r}")
    if "(Binary)" not in words:
        raise SourceError(source, None, f"not a binary-protocol port: greeting {line1[:60]!r}")
    try:
        salt = base64.b64decode(data[64:127].strip(), validate=True)
    except ValueError:
        raise SourceError(source, None, "greeting salt is not base64") from None
    if len(salt) < SCRAMBLE_SIZE:
        raise SourceError(source, None, f"greeting salt has {len(salt)} bytes, fewer than {SCRAMBLE_SIZE}")
    instance = words[-1] if len(words) >= 4 else None
    return Greeting(words[1], instance, salt)
