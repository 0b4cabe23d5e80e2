"""A writer in a thread of its own, for tests that read a log while a server keeps being written: start it with
``with``, wait for an amount written (never a time: a loaded machine writes slower), stop it, and have its failure
reported by the test rather than lost in the thread."""

from __future__ import annotations

import random
import threading
from typing import Any

from tests.support.waiting import until


class WriterThread:
    """Subclasses write in :meth:`_run` until :attr:`_stop` is set, counting :attr:`transactions` and putting a
    failure in :attr:`error`."""

    name = "writer"

    def __init__(self, server: Any, *, seed: int) -> None:
        self.server = server
        self.random = random.Random(seed)
        self.transactions = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def __enter__(self) -> Any:
        self.start()
        return self

    def start(self) -> None:
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        if self.error is not None:
            raise AssertionError(f"the writer failed: {self.error}")

    def wait_for(self, transactions: int) -> None:
        """Until ``transactions`` are committed since the start."""
        if not until(lambda: self.transactions >= transactions or self.error is not None):
            raise AssertionError(f"the writer committed {self.transactions} of {transactions} transactions")
        if self.error is not None:
            raise AssertionError(f"the writer failed: {self.error}")

    def wait_more(self, transactions: int) -> None:
        """Until ``transactions`` more are committed than now (an amount, not a time)."""
        self.wait_for(self.transactions + transactions)

    def _run(self) -> None:
        raise NotImplementedError
