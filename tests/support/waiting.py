"""Waiting for a state, not for luck: the one polling helper the tests share.

A test that needs something to have happened (rows printed, a file written, a query caught up, a server up)
polls for it with a deadline far above what it takes on an idle machine, so a loaded machine (the suite runs on
2 shared cores) only makes the test slower, never red. A passing test returns as soon as the state holds, so a
long deadline costs nothing. A ``time.sleep`` is only for pacing a writer, or as a short grace period before
checking that something wrong (a repeat, an extra row) did *not* happen.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Seconds a test waits for a state to come (rows, files, a caught-up query) before it fails.
STATE_TIMEOUT = 120.0
#: Seconds for a Spark query to reach a state (its first batches start Python workers; a loaded JVM is slow).
QUERY_TIMEOUT = 300.0


def until(check: Callable[[], bool], timeout: float = STATE_TIMEOUT, *, alive: Callable[[], bool] | None = None,
          interval: float = 0.02) -> bool:
    """Poll ``check`` until it holds, ``alive`` (if given: a process or query still running) stops holding, or
    ``timeout`` seconds passed; ``check``'s last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (alive is None or alive()):
        if check():
            return True
        time.sleep(interval)
    return check()


def expect(check: Callable[[], bool], timeout: float, what: str) -> None:
    """:func:`until` ``check`` holds, else an AssertionError naming ``what`` was awaited."""
    if not until(check, timeout, interval=0.1):
        raise AssertionError(f"timed out waiting for {what}")
