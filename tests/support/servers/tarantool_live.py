"""A long-lived Tarantool 2.6 server on loopback for the live replication tests (and benchmarks).

:class:`LiveTarantool` starts ``tarantool`` in a temporary directory with ``listen`` on a free loopback port, a
small ``replication_timeout``, and users for the tests:

- ``repl`` / ``repl-secret``: the ``replication`` role (what a reader needs);
- ``noperm`` / ``noperm-secret``: a user without any privilege beyond the defaults.

It also opens an admin console on a Unix socket; :meth:`LiveTarantool.eval` runs Lua there and returns the
console's YAML answer as text. :meth:`stop` kills (SIGKILL) or stops the process; :meth:`start` again on the
same directory restarts it with the same data and port.

Two servers are shared by the session, each started when a module first asks for it and lent to one module at a time
(:meth:`LiveTarantool.checkout`): ``live_tarantool`` (the defaults above) and ``collecting_tarantool`` (one checkpoint
kept, 64 KiB xlogs: a ``box.snapshot()`` collects the xlogs before it). Modules isolate themselves by the spaces they
create, or by reading vclock ranges of their own writes with the shared spaces ``t`` and ``sy`` emptied for them; a
module that stops, kills or pauses a server has its own.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers.tarantool import server_log, tarantool_binary
from tests.support.waiting import STATE_TIMEOUT

USER, PASSWORD = "repl", "repl-secret"
NOPERM_USER, NOPERM_PASSWORD = "noperm", "noperm-secret"

_BOOT = r"""
box.cfg{
    listen = '127.0.0.1:%(port)d',
    wal_dir = '%(dir)s', memtx_dir = '%(dir)s', vinyl_dir = '%(dir)s', work_dir = '%(dir)s',
    log = '%(dir)s/tarantool.log',
    replication_timeout = %(replication_timeout)s,
    checkpoint_count = %(checkpoint_count)d,
    wal_max_size = %(wal_max_size)d,
    memtx_memory = 512 * 1024 * 1024,
}
box.once('live-test-users', function()
    box.schema.user.create('%(user)s', {password = '%(password)s'})
    box.schema.user.grant('%(user)s', 'replication')
    box.schema.user.create('%(noperm)s', {password = '%(noperm_password)s'})
    local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'v', 'any'}}})
    s:create_index('pk')
    local sy = box.schema.space.create('sy', {is_sync = true})
    sy:create_index('pk')
end)
-- last: start() waits for the console, and box.once above yields (WAL writes) while it creates the users and spaces
require('console').listen('unix/:%(dir)s/admin.sock')
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveTarantool:
    """One tarantool process serving IPROTO on ``127.0.0.1:port`` (see module docstring)."""

    def __init__(self, directory: Path, *, replication_timeout: float = 0.2, checkpoint_count: int = 2,
                 wal_max_size: int = 256 << 20) -> None:
        self.directory = directory
        self.port = free_port()
        self.replication_timeout = replication_timeout
        self.checkpoint_count = checkpoint_count
        self.wal_max_size = wal_max_size
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"tarantool://{USER}@127.0.0.1:{self.port}"

    def options(self, **extra: object) -> dict[str, object]:
        return {"uri": self.uri, "password": PASSWORD, "readTimeout": 5, **extra}

    def start(self, timeout: float = STATE_TIMEOUT) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        boot = self.directory / "boot.lua"
        boot.write_text(_BOOT % {
            "port": self.port, "dir": str(self.directory), "replication_timeout": repr(self.replication_timeout),
            "checkpoint_count": self.checkpoint_count, "wal_max_size": self.wal_max_size,
            "user": USER, "password": PASSWORD, "noperm": NOPERM_USER, "noperm_password": NOPERM_PASSWORD,
        })
        sock = self.directory / "admin.sock"
        if sock.exists():
            sock.unlink()
        self.proc = subprocess.Popen([tarantool_binary(), str(boot)], cwd=self.directory,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tarantool exited with {self.proc.returncode}:\n{server_log(self.directory)}")
            if sock.exists():
                try:
                    self.eval("return box.info.status")
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"tarantool did not start in {timeout} s:\n{server_log(self.directory)}")

    def checkout(self, truncate: tuple[str, ...] = ()) -> LiveTarantool:
        """Lend the shared server to the next module: running again if the last module left it stopped, and the
        spaces ``truncate`` emptied (as on a fresh server: a module's workload inserts keys an earlier one did)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        for space in truncate:
            self.eval(f"box.space.{space}:truncate()")
        return self

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def pause(self) -> None:
        """SIGSTOP: the server keeps its sockets open but answers nothing (a stalled server)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def eval(self, lua: str, timeout: float = 60.0) -> str:
        """Run ``lua`` (one line) on the admin console; return the YAML answer; raise on a Lua error."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(str(self.directory / "admin.sock"))
            data = b""
            while b"\n" not in data:  # console greeting line(s)
                data += s.recv(4096)
            s.sendall(lua.replace("\n", " ").encode() + b"\n")
            answer = b""
            while not answer.endswith(b"\n...\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        text = answer.decode(errors="replace")
        if "- error:" in text:
            raise RuntimeError(f"Lua error from {lua[:80]!r}: {text}")
        return text

    def value(self, lua_expr: str) -> str:
        """The scalar result of a Lua expression as text (``return <expr>``)."""
        text = self.eval(f"return {lua_expr}")
        lines = [ln for ln in text.splitlines() if ln.startswith("- ")]
        return lines[0][2:].strip().strip("'") if lines else ""

    def json(self, lua_expr: str) -> Any:
        """The value of a Lua expression, through JSON (written to a file: console YAML may fold long lines)."""
        out = self.directory / "eval.json"
        self.eval(f"local f = io.open('{out}', 'w') f:write(require('json').encode({lua_expr})) f:close()")
        return json.loads(out.read_text())

    def vclock(self) -> dict[int, int]:
        """box.info.vclock without component 0 (local rows)."""
        text = self.json("(function() local v = {} for k, l in pairs(box.info.vclock) do v[tostring(k)] = l end "
                         "return v end)()")
        return {int(k): v for k, v in text.items() if int(k) != 0} if isinstance(text, dict) else {}

    def xlog_files(self) -> list[Path]:
        return sorted(self.directory.glob("*.xlog"))


@pytest.fixture(scope="session")
def live_tarantool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    """The session's Tarantool with the default settings; modules take it through a module fixture (``checkout``)."""
    server = LiveTarantool(tmp_path_factory.mktemp("live-shared"))
    server.start()
    yield server
    server.stop(kill=True)


@pytest.fixture(scope="session")
def collecting_tarantool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    """The session's Tarantool keeping one checkpoint, with 64 KiB xlogs; modules take it through a module fixture."""
    server = LiveTarantool(tmp_path_factory.mktemp("collecting-shared"), checkpoint_count=1, wal_max_size=64 << 10)
    server.start()
    yield server
    server.stop(kill=True)
