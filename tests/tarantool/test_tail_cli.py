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
from tests.support.waiting import STATE_TIMEOUT, until


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

    def wait_for(self, predicate, timeout: float = STATE_TIMEOUT) -> None:
        until(lambda: predicate(self), timeout, alive=lambda: self.proc.poll() is None)

    def interrupt(self) -> int:
        """Ctrl-C, then the exit status once every output line is collected."""
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=STATE_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for t in self._threads:
            t.join(timeout=10)
        return code


def _max_lsn(writer, space: int = 512) -> int:
    """The newest LSN of ``space`` in the directory now (the active xlog up to its last whole block)."""
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in writer.xlogs()], spaceId=space)
    return max(table.column("lsn").to_pylist())


def _last_lsn(follow: Follow) -> int:
    return json.loads(follow.lines[-1])["lsn"] if follow.lines else -1


def test_follow_prints_rows_as_written_and_stops_on_ctrl_c(tmp_path):
    # The writer holds before each of its two snapshots (after transactions 150 and 300) until the test lets it
    # go: the first follow is seen printing rows while the writer is held, then rows written after that, and is
    # stopped before the last 100 transactions are written, so the resumed follow always has rows of its own
    # whatever the load on the machine.
    gate = tmp_path / "gate"
    gate.mkdir()
    writer = start_writer(tmp_path / "wal", total=400, period=0.01, snapshot_every=150, snapshot_gate=gate)
    writer.wait_for_xlog()
    cmd = [sys.executable, "-m", "spark_logsource.cli", "follow", str(writer.directory), "--space", "512",
           "--interval", "0.1", "--option", "maxRowsPerTrigger=40"]
    first = Follow(cmd)
    try:
        first.wait_for(lambda f: f.lines)
        assert first.lines, first.err.decode()
        assert until(lambda: (gate / "waiting-1").exists()), "writer at its first snapshot"
        held = _max_lsn(writer)
        first.wait_for(lambda f: _last_lsn(f) >= held)
        assert _last_lsn(first) == held, first.err.decode()
        (gate / "go-1").touch()
        first.wait_for(lambda f: _last_lsn(f) > held)
        assert _last_lsn(first) > held  # rows written after the follow had caught up: printed as they come
        assert until(lambda: (gate / "waiting-2").exists()), "writer at its second snapshot"
        assert len(writer.xlogs()) >= 3
        held = _max_lsn(writer)
        first.wait_for(lambda f: _last_lsn(f) >= held)
        code = first.interrupt()
    finally:
        first.proc.kill()  # (only if a step above failed: interrupt() waited for its exit)
        for k in (1, 2):  # the last 100 transactions come after the first follow stopped
            (gate / f"go-{k}").touch()
        writer.finish()
    assert code == 0
    text = first.err.decode()
    assert "Traceback" not in text
    rows = first.rows()  # every line is a whole JSON row, even the last one before Ctrl-C
    assert len(rows) > 20
    assert {r["space_id"] for r in rows} == {512}
    lsns = [r["lsn"] for r in rows]
    assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)  # in log order, never twice
    assert max(lsns) == held  # stopped with every row the writer had written by then
    assert isinstance(rows[0]["tuple"], list)  # tuples as JSON, not text
    # The resume hint (on stderr) starts a second run where nothing of the first is lost.
    hint = text.split("--from '", 1)[1].split("'", 1)[0]
    assert json.loads(hint)["kind"] == "tarantool-xlog"
    everything = spark_logsource.read("tarantool-xlog", [str(p) for p in writer.xlogs()], spaceId=512)
    wanted = set(everything.column("lsn").to_pylist())
    assert max(wanted) > held
    second = Follow([*cmd, "--from", hint])
    second.wait_for(lambda f: _last_lsn(f) >= max(wanted))
    time.sleep(0.5)  # a grace period for a wrong extra row, not a wait for an expected one
    assert second.interrupt() == 0, second.err.decode()
    lsns2 = [r["lsn"] for r in second.rows()]
    assert len(set(lsns2)) == len(lsns2)
    assert set(lsns) | set(lsns2) == wanted
    # The hint is the end of the last range printed whole: a Ctrl-C landing inside a range (at most
    # maxRowsPerTrigger rows) may print that range's rows again, and nothing else of the first run.
    again = [lsn for lsn in lsns2 if lsn in set(lsns)]
    assert len(again) <= 40 and again == lsns[len(lsns) - len(again):] and lsns2[:len(again)] == again
    assert min(lsns2) > min(lsns)  # resumed, not restarted from the beginning
