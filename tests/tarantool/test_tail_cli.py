"""``spark-logsource follow DIR``: rows printed as a real Tarantool writes them, a clean end on Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import spark_logsource
from tests.support.tarantool_writer import start_writer


class Follow:
    """``spark-logsource follow`` in a subprocess, its stdout lines and stderr drained by threads (a full pipe
    would block the command and it could never see Ctrl-C)."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[bytes] = []
        self.err = b""
        self._threads = [threading.Thread(target=self._out, daemon=True),
                         threading.Thread(target=self._errs, daemon=True)]
        for t in self._threads:
            t.start()

    def _out(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def _errs(self) -> None:
        self.err = self.proc.stderr.read()

    def rows(self) -> list[dict]:
        return [json.loads(line) for line in list(self.lines)]

    def wait_for(self, predicate, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None and not predicate(self):
            time.sleep(0.05)

    def interrupt(self) -> int:
        """Ctrl-C, then the exit status once every output line is collected."""
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for t in self._threads:
            t.join(timeout=10)
        return code


def test_follow_prints_rows_as_written_and_stops_on_ctrl_c(tmp_path):
    writer = start_writer(tmp_path / "wal", total=400, period=0.01, snapshot_every=150)
    writer.wait_for_xlog()
    cmd = [sys.executable, "-m", "spark_logsource.cli", "follow", str(writer.directory), "--space", "512",
           "--interval", "0.1", "--option", "maxRowsPerTrigger=40"]
    try:
        first = Follow(cmd)
        first.wait_for(lambda f: f.lines, 30)
        assert first.lines, first.err.decode()
        assert writer.running  # rows arrive while the writer is still writing
        first.wait_for(lambda f: len(writer.xlogs()) >= 3, 30)
        time.sleep(0.5)
        code = first.interrupt()
    finally:
        writer.finish()
    assert code == 0
    text = first.err.decode()
    assert "Traceback" not in text
    rows = first.rows()  # every line is a whole JSON row, even the last one before Ctrl-C
    assert len(rows) > 20
    assert {r["space_id"] for r in rows} == {512}
    lsns = [r["lsn"] for r in rows]
    assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)  # in log order, never twice
    assert isinstance(rows[0]["tuple"], list)  # tuples as JSON, not text
    # The resume hint (on stderr) starts a second run where nothing of the first is lost.
    hint = text.split("--from '", 1)[1].split("'", 1)[0]
    assert json.loads(hint)["kind"] == "tarantool-xlog"
    everything = spark_logsource.read("tarantool-xlog", [str(p) for p in writer.xlogs()], spaceId=512)
    wanted = set(everything.column("lsn").to_pylist())
    second = Follow([*cmd, "--from", hint])
    second.wait_for(lambda f: f.lines and json.loads(f.lines[-1])["lsn"] >= max(wanted), 60)
    time.sleep(0.5)  # anything printed after the last row would be a duplicate
    assert second.interrupt() == 0, second.err.decode()
    lsns2 = [r["lsn"] for r in second.rows()]
    assert len(set(lsns2)) == len(lsns2)
    assert set(lsns) | set(lsns2) == wanted
    assert lsns2 and min(lsns2) > min(lsns)  # resumed, not restarted from the beginning
