"""``spark_logsource.follow`` running in a thread, as an application runs it: rows collected as they come, the
idle polls of its loop counted, so a test can wait for several polls (a state) instead of sleeping."""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import pytest

import spark_logsource
import spark_logsource.streaming.follow as follow_module
from tests.support.waiting import STATE_TIMEOUT, until


class _Stopped(Exception):
    """Raised in the follow loop's idle wait once the test is done with it."""


class FollowThread:
    """``follow(fmt, path, **options)`` polling every 20 ms in a daemon thread until :meth:`stop`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fmt: str, path: str, **options: Any) -> None:
        self.rows: list[dict[str, Any]] = []
        self.failed: list[BaseException] = []
        self.polls = 0
        self._stop = threading.Event()
        monkeypatch.setattr(follow_module, "time", types.SimpleNamespace(sleep=self._sleep))
        self._gen = spark_logsource.follow(fmt, path, poll_interval=0.02, **options)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sleep(self, seconds: float) -> None:
        self.polls += 1
        if self._stop.is_set():
            raise _Stopped  # ends the loop from inside its idle wait
        time.sleep(seconds)

    def _run(self) -> None:
        try:
            for batch, _ in self._gen:
                self.rows.extend(batch.to_pylist())
                if self._stop.is_set():
                    return
        except _Stopped:
            return
        except BaseException as exc:  # handed to the test thread
            self.failed.append(exc)

    def wait_polls(self, count: int, timeout: float = STATE_TIMEOUT) -> bool:
        """Until the loop went idle ``count`` times (or failed)."""
        return until(lambda: self.polls >= count or bool(self.failed), timeout)

    def wait_rows(self, count: int, timeout: float = STATE_TIMEOUT) -> bool:
        return until(lambda: len(self.rows) >= count or bool(self.failed), timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
