"""A real Tarantool that keeps writing while streaming tests tail its WAL directory.

:func:`start_writer` runs ``workloads/tarantool_stream_writer.lua`` (every DML type, single- and
multi-statement transactions, local-space rows, optional ``box.snapshot()`` every N transactions) on a fresh
instance in a directory, in the background; :class:`Writer` waits for it or tells it to stop.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.servers.tarantool import WORKLOADS_DIR, TarantoolError, boot_script, server_log, tarantool_binary
from tests.support.waiting import STATE_TIMEOUT

WRITER_SCRIPT = WORKLOADS_DIR / "tarantool_stream_writer.lua"


@dataclass
class Writer:
    """A running writer instance in ``directory``."""

    directory: Path
    proc: subprocess.Popen[bytes]
    stop_file: Path

    def xlogs(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if p.name.endswith(".xlog"))

    def wait_for_xlog(self, timeout: float = STATE_TIMEOUT) -> None:
        """Until the first xlog has its meta header (the instance wrote something)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.stat().st_size > 0 for p in self.xlogs()):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise TarantoolError(f"no xlog in {self.directory}:\n{server_log(self.directory)}")

    def finish(self, timeout: float = STATE_TIMEOUT) -> None:
        """Let the writer end (it exits once its transactions are written); raise if it failed."""
        self.stop_file.touch()
        try:
            output, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise TarantoolError(f"writer did not finish in {timeout} s:\n{server_log(self.directory)}") from None
        if self.proc.returncode != 0:
            raise TarantoolError(f"writer exited {self.proc.returncode}:\n{output.decode(errors='replace')[-3000:]}"
                                 f"\n{server_log(self.directory)}")

    @property
    def running(self) -> bool:
        return self.proc.poll() is None


def start_writer(directory: Path, *, total: int = 200, period: float = 0.01, snapshot_every: int = 0,
                 wait: bool = False, cfg: Mapping[str, Any] | None = None, snapshot_gate: Path | None = None
                 ) -> Writer:
    """Start the writer in ``directory``; with ``wait`` it exits after its last transaction, otherwise it
    waits for :meth:`Writer.finish`. ``cfg`` adds ``box.cfg{}`` options (``wal_max_size``, ``checkpoint_count``).
    With ``snapshot_gate`` (a directory) the k-th snapshot waits for the file ``go-k`` there, after the writer
    created ``waiting-k``."""
    directory.mkdir(parents=True, exist_ok=True)
    stop_file = directory / "writer.stop"
    boot = directory / "boot.lua"
    boot.write_text(boot_script(directory, WRITER_SCRIPT, {"wal_max_size": 32 << 10, **(cfg or {})}))
    env = {**os.environ, "WRITER_TOTAL": str(total), "WRITER_PERIOD": str(period),
           "WRITER_SNAPSHOT_EVERY": str(snapshot_every), "WRITER_STOP_FILE": "" if wait else str(stop_file),
           "WRITER_SNAPSHOT_GATE": "" if snapshot_gate is None else str(snapshot_gate)}
    proc = subprocess.Popen([tarantool_binary(), str(boot)], cwd=directory, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return Writer(directory, proc, stop_file)


def finished_wal(directory: Path, *, total: int, snapshot_every: int) -> Path:
    """A WAL directory whose writer has exited: several closed xlogs (rotations and snapshots)."""
    writer = start_writer(directory, total=total, period=0, snapshot_every=snapshot_every, wait=True)
    writer.finish()
    assert len(writer.xlogs()) >= 3
    return writer.directory
