"""The test side of ``child.py``: start the job in a process group of its own, wait for states it writes, kill it
with SIGKILL (the Python driver and its JVM at once, as a crashed machine would), restart it on the same
checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cdc_crash.child import EXIT_STOPPED, PASSWORD_ENV
from tests.support.waiting import QUERY_TIMEOUT, expect, until

REPO = Path(__file__).resolve().parents[2]


class Job:
    """One streaming job (a child process running ``child.py``) on a fixed checkpoint and target."""

    def __init__(self, base: Path, job: dict[str, Any], password: str | None = None) -> None:
        self.base = base
        self.state = base / "state"
        self.state.mkdir(parents=True, exist_ok=True)
        self.job = {**job, "state": str(self.state), "checkpoint": str(base / "checkpoint"),
                    "password": password is not None}
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    @property
    def target(self) -> Path:
        return Path(self.job["target"])

    def start(self, trigger: str = "300 milliseconds", options: dict[str, str] | None = None) -> None:
        """Start the job; ``options`` replace the source's options for this run (a user may change a budget when
        restarting a query: Spark reads them anew at each start)."""
        assert self.proc is None, "one child at a time"
        self.runs += 1
        for name in ("started", "error.txt"):
            (self.state / name).unlink(missing_ok=True)
        spec = self.base / f"job-{self.runs}.json"
        job = {**self.job, "trigger": trigger, "options": {**self.job["options"], **(options or {})}}
        spec.write_text(json.dumps(job))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        if self.password is not None:
            env[PASSWORD_ENV] = self.password
        log = open(self.base / f"child-{self.runs}.log", "wb")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cdc_crash.child", str(spec)], cwd=REPO, env=env,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def batches(self) -> dict[int, dict[str, Any]]:
        """The batches the job merged (the last attempt of each)."""
        out = {}
        for path in (self.state / "batches").glob("*.json"):
            out[int(path.stem)] = json.loads(path.read_text())
        return out

    def attempts(self) -> list[dict[str, Any]]:
        path = self.state / "attempts.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def wait_batches(self, check: Any, what: str, timeout: float = QUERY_TIMEOUT) -> None:
        """Until ``check(batches)`` holds while the child runs."""
        ok = until(lambda: check(self.batches()), timeout, alive=self.alive, interval=0.1)
        if not ok:
            raise AssertionError(f"the job did not reach {what} (alive: {self.alive()}):\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the child's whole process group (driver and JVM), then reap it."""
        assert self.proc is not None
        pgid = self.proc.pid  # start_new_session: the child leads its own group
        os.killpg(pgid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        assert self.proc.returncode == -signal.SIGKILL
        # the JVM is in the group too: until no process of the group is left
        expect(lambda: not _group_alive(pgid), 60, "the killed job's JVM to exit")
        self.proc = None

    def wait_exit(self, timeout: float = QUERY_TIMEOUT) -> int:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the job did not end in {timeout} s:\n{self.log_tail()}") from None
        self.proc = None
        return code

    def error(self) -> str:
        path = self.state / "error.txt"
        return path.read_text() if path.exists() else ""

    def log_tail(self) -> str:
        path = self.base / f"child-{self.runs}.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        self.proc = None


def _group_alive(pgid: int) -> bool:
    """A process of group ``pgid`` that is not a zombie (a killed JVM waits for its new parent to reap it)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


STOPPED = EXIT_STOPPED
