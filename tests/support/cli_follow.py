"""``spark-logsource follow`` in a subprocess: its JSON lines collected as they come, then a clean Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.support.waiting import STATE_TIMEOUT, until

REPO = Path(__file__).resolve().parents[2]


class FollowProcess:
    """Runs ``argv`` (a ``python -m spark_logsource.cli follow ...`` command line) from the repository root."""

    def __init__(self, argv: list[str]) -> None:
        self.lines: list[bytes] = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    def wait_for(self, count: int, timeout: float = STATE_TIMEOUT) -> None:
        """Until ``count`` lines arrived, the process ended, or ``timeout`` seconds passed."""
        until(lambda: len(self.lines) >= count, timeout, alive=lambda: self.proc.poll() is None)

    def interrupt(self, settle: float = 0.3) -> tuple[int, str]:
        """Ctrl-C after ``settle`` seconds (a row printed after the expected ones would be a row too many); the
        exit code and everything written to stderr."""
        time.sleep(settle)
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=STATE_TIMEOUT)
        finally:
            self.kill()
        self._reader.join(timeout=10)
        return code, self.proc.stderr.read().decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def __enter__(self) -> FollowProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
