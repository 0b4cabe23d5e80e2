"""Real Tarantool (Debian 2.6) workloads run once per pytest session, each in its own temporary directory.

Every workload is a Lua script in ``tests/support/workloads/tarantool_<name>.lua``. :func:`run_workload` starts
``tarantool`` on a generated boot script that calls ``box.cfg{}`` with ``listen`` on loopback port 0 and
``wal_dir`` / ``memtx_dir`` / ``vinyl_dir`` / ``log`` inside the directory, runs the workload with
``dofile()``, and ends with ``os.exit(0)`` (Tarantool closes its xlog with the EOF marker). A workload that
raises makes the boot script exit 1, and :func:`run_workload` raises :class:`TarantoolError` with the
server's log. The session fixture ``tarantool_workloads`` runs all of them in parallel (a few seconds in
total) and ``pytest.fail``s, never skips, when tarantool is missing or a workload fails.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

log = logging.getLogger(__name__)

TARANTOOL = "tarantool"
WORKLOADS_DIR = Path(__file__).resolve().parent.parent / "workloads"
WORKLOAD_TIMEOUT_S = 120.0
#: File kinds written in the xlog container format that Tarantool's ``xlog.pairs()`` reads.
LOG_SUFFIXES = (".xlog", ".snap", ".vylog")


class TarantoolError(RuntimeError):
    """tarantool is missing, or a workload script failed (the message holds the server log)."""


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload script and the extra ``box.cfg{}`` options it runs with."""

    name: str
    cfg: Mapping[str, Any] = field(default_factory=dict)

    @property
    def script(self) -> Path:
        return WORKLOADS_DIR / f"tarantool_{self.name}.lua"


#: Every workload of the suite; the keys of ``tarantool_workloads``.
WORKLOADS: tuple[WorkloadSpec, ...] = (
    WorkloadSpec("dml"),
    WorkloadSpec("types"),
    WorkloadSpec("txn"),
    WorkloadSpec("ddl"),
    WorkloadSpec("vinyl", {"vinyl_memory": 16 << 20, "vinyl_cache": 1 << 20}),
    WorkloadSpec("blocks", {"wal_mode": "fsync"}),
    WorkloadSpec("sync", {"replication_synchro_quorum": 1}),
)


@dataclass(frozen=True)
class WorkloadResult:
    """The directory a workload ran in and the log files Tarantool left there."""

    name: str
    directory: Path

    @property
    def files(self) -> list[Path]:
        """The .xlog, .snap and .vylog files, sorted by name (= vclock signature) then kind."""
        found = [p for p in self.directory.iterdir() if p.suffix in LOG_SUFFIXES and p.is_file()]
        return sorted(found, key=lambda p: (p.name.split(".")[0], p.suffix))

    def files_of(self, suffix: str) -> list[Path]:
        return [p for p in self.files if p.suffix == suffix]


def lua_literal(value: Any) -> str:
    """A Lua literal for a box.cfg{} option value (bool, int, float, str)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no Lua literal for {value!r}")


def boot_script(directory: Path, workload: Path, cfg: Mapping[str, Any]) -> str:
    """The Lua text that configures a fresh instance in ``directory``, runs ``workload`` and exits."""
    options = {
        "listen": "127.0.0.1:0",
        "wal_dir": str(directory),
        "memtx_dir": str(directory),
        "vinyl_dir": str(directory),
        "work_dir": str(directory),
        "log": str(directory / "tarantool.log"),
        "checkpoint_count": 100,  # keep every snapshot and xlog the workload makes
        **cfg,
    }
    cfg_text = ", ".join(f"{key} = {lua_literal(value)}" for key, value in options.items())
    return (
        f"box.cfg{{{cfg_text}}}\n"
        f"local ok, err = pcall(dofile, {lua_literal(str(workload))})\n"
        "if not ok then\n"
        "    io.stderr:write('workload failed: ', tostring(err), '\\n')\n"
        "    os.exit(1)\n"
        "end\n"
        "os.exit(0)\n"
    )


def tarantool_binary() -> str:
    """The path of the tarantool executable, or TarantoolError if it is not installed."""
    path = shutil.which(TARANTOOL)
    if path is None:
        raise TarantoolError("tarantool not found on PATH: apt-get install tarantool (Debian 2.6)")
    return path


def _start(directory: Path, script: Path, cfg: Mapping[str, Any]) -> subprocess.Popen[bytes]:
    if not script.is_file():
        raise TarantoolError(f"workload script {script} is missing")
    directory.mkdir(parents=True, exist_ok=True)
    boot = directory / "boot.lua"
    boot.write_text(boot_script(directory, script, cfg))
    return subprocess.Popen([tarantool_binary(), str(boot)], cwd=directory,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen[bytes], directory: Path, label: str, timeout: float) -> None:
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        raise TarantoolError(f"tarantool {label} did not finish in {timeout} s:\n{server_log(directory)}") from None
    if proc.returncode != 0:
        raise TarantoolError(
            f"tarantool {label} exited with {proc.returncode}:\n{output.decode(errors='replace')[-4000:]}\n"
            f"--- log ---\n{server_log(directory)}"
        )


def server_log(directory: Path) -> str:
    try:
        return (directory / "tarantool.log").read_text(errors="replace")[-8000:]
    except OSError as exc:
        return f"(no log: {exc})"


def run_script(script: Path, directory: Path, cfg: Mapping[str, Any] | None = None,
               timeout: float = WORKLOAD_TIMEOUT_S) -> WorkloadResult:
    """Run one Lua workload ``script`` on a fresh instance in ``directory`` (created if needed)."""
    proc = _start(directory, script, cfg or {})
    _finish(proc, directory, script.name, timeout)
    return WorkloadResult(script.stem, directory)


def run_workloads(specs: tuple[WorkloadSpec, ...], base: Path) -> dict[str, WorkloadResult]:
    """Run ``specs`` in parallel, each in ``base/<name>``; raise TarantoolError if any fails."""
    running = {spec.name: _start(base / spec.name, spec.script, spec.cfg) for spec in specs}
    errors = []
    results = {}
    for name, proc in running.items():
        try:
            _finish(proc, base / name, name, WORKLOAD_TIMEOUT_S)
            results[name] = WorkloadResult(name, base / name)
        except TarantoolError as exc:
            errors.append(str(exc))
    if errors:
        raise TarantoolError("\n\n".join(errors))
    log.info("tarantool workloads done in %s: %s", base, ", ".join(results))
    return results


@pytest.fixture(scope="session")
def tarantool_workloads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, WorkloadResult]:
    """Every workload of :data:`WORKLOADS`, run once per session by the real tarantool (fails, never skips)."""
    try:
        return run_workloads(WORKLOADS, tmp_path_factory.mktemp("tarantool"))
    except TarantoolError as exc:
        pytest.fail(str(exc))
