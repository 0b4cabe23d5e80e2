"""Riding through a server restart or failover: reconnect with back-off, for up to the ``reconnectTimeout`` option.

Both live replication sources (``mysql-replication``, ``tarantool-replication``) use this one policy, on the
driver (``initial_offset``, ``latest_offset``, ``plan``: each opens a short connection) and on executors (a slice
whose connection broke resumes after the last event it received). Only
:class:`~spark_logsource.errors.UnavailableError` is retried — refused, reset or closed connections, a server
shutting down or still starting; a wrong password, a missing privilege, lost data or a protocol error fail at once.

Each failed try is logged at WARNING with the server (never its credentials) and the error. When the server is
still unreachable after ``reconnectTimeout`` seconds, the last error is raised again, saying how long and how
many times we tried. ``reconnectTimeout=0`` fails at the first error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from spark_logsource.errors import UnavailableError
from spark_logsource.options import OptionMap

__all__ = ["DEFAULT_RECONNECT_TIMEOUT", "RECONNECT_OPTION", "Backoff", "Reconnect", "parse_reconnect"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The option's name, as users spell it.
RECONNECT_OPTION = "reconnectTimeout"
#: Seconds: long enough for a database restart or a failover, short enough for a wrong port to surface.
DEFAULT_RECONNECT_TIMEOUT = 300.0
#: First pause after a failed try; each next pause doubles, up to :data:`MAX_PAUSE`.
FIRST_PAUSE = 0.25
MAX_PAUSE = 10.0


@dataclass(frozen=True, slots=True)
class Reconnect:
    """How long to keep trying a server that is unavailable (picklable: slices carry it to executors)."""

    timeout: float = DEFAULT_RECONNECT_TIMEOUT

    def backoff(self) -> Backoff:
        """A fresh run of tries (one per operation, or per broken connection of a long read)."""
        return Backoff(self)

    def call(self, fn: Callable[[], T], doing: str) -> T:
        """``fn()``, tried again after each :class:`UnavailableError` until it succeeds or time is up."""
        backoff = self.backoff()
        while True:
            try:
                return fn()
            except UnavailableError as exc:
                backoff.failed(exc, doing)


@dataclass(slots=True)
class Backoff:
    """The tries of one operation: :meth:`failed` pauses (growing) or raises once ``timeout`` is spent."""

    policy: Reconnect
    tries: int = 0
    started: float | None = field(default=None)

    def failed(self, exc: UnavailableError, doing: str) -> None:
        """Log the failed try and pause before the next; raise ``exc`` (with how long we tried) when time is up."""
        now = time.monotonic()
        if self.started is None:
            self.started = now
        self.tries += 1
        spent = now - self.started
        timeout = self.policy.timeout
        if spent >= timeout:
            if timeout <= 0:
                raise exc
            raise UnavailableError(exc.source, exc.position,
                                   f"{exc.reason}; still unavailable after {self.tries} tries over {spent:.0f} s "
                                   f"({RECONNECT_OPTION}={timeout:g})") from None
        pause = min(FIRST_PAUSE * 2 ** (self.tries - 1), MAX_PAUSE, timeout - spent)
        log.warning("%s: %s while %s (try %d); retrying in %.2g s, for up to %.0f s more (%s=%g)",
                    exc.source, exc.reason, doing, self.tries, pause, timeout - spent, RECONNECT_OPTION, timeout)
        time.sleep(pause)

    def succeeded(self) -> None:
        """The server answered again: a later failure starts a new run of tries."""
        self.tries = 0
        self.started = None


def parse_reconnect(opts: OptionMap) -> Reconnect:
    """The ``reconnectTimeout`` option (seconds, default :data:`DEFAULT_RECONNECT_TIMEOUT`; 0: no retry)."""
    return Reconnect(opts.seconds(RECONNECT_OPTION, DEFAULT_RECONNECT_TIMEOUT, minimum=0))
