"""Session-scoped fixture ``mariadb``: a real MariaDB server on loopback in a temporary datadir.

The server is started once per pytest session from the Debian packages (``mariadb-install-db`` +
``mariadbd``), with its own datadir, socket, port and binlog directory under a tmp dir, so it needs no
systemd, apparmor or root account set-up. Binary logging is on with ``binlog_format=ROW``; tests switch
``binlog_row_metadata`` / ``binlog_row_image`` / ``log_bin_compress`` / ``binlog_checksum`` per workload
with :meth:`MariaDBServer.set_global` and capture the binlog file(s) a workload wrote with
:meth:`MariaDBServer.run_workload`.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.waiting import STATE_TIMEOUT

log = logging.getLogger(__name__)

START_TIMEOUT_S = STATE_TIMEOUT


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_user_args() -> list[str]:
    """mariadbd refuses to run as root unless told to; as another user it runs as that user."""
    if os.geteuid() == 0:
        return ["--user=root"]
    return []


class MariaDBServer:
    """A running mariadbd with a root connection over its Unix socket."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.datadir = base / "data"
        self.binlog_dir = base / "binlog"
        self.socket_path = base / "sock"
        self.error_log = base / "error.log"
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Any = None

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the server, creating the datadir first unless it holds one already (a kept benchmark datadir);
        raise RuntimeError with the error log on failure."""
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.binlog_dir.mkdir(exist_ok=True)
        if not (self.datadir / "mysql").is_dir():
            install = subprocess.run(
                ["mariadb-install-db", "--no-defaults", *_server_user_args(), f"--datadir={self.datadir}",
                 "--auth-root-authentication-method=normal", "--skip-test-db"],
                capture_output=True, text=True, timeout=120,
            )
            if install.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed:\n{install.stdout}\n{install.stderr}")
        args = [
            "mariadbd", "--no-defaults", *_server_user_args(),
            f"--datadir={self.datadir}", f"--socket={self.socket_path}", f"--port={self.port}",
            "--skip-networking=0", "--bind-address=127.0.0.1", f"--pid-file={self.base / 'mariadbd.pid'}",
            f"--log-error={self.error_log}", f"--log-bin={self.binlog_dir / 'mysql-bin'}",
            "--server-id=1", "--binlog-format=ROW", "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=64M", "--max-allowed-packet=64M", "--innodb-flush-log-at-trx-commit=0",
            "--sync-binlog=0", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
        ]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"mariadbd exited with {self._proc.returncode}:\n{self.read_error_log()}")
            try:
                self._conn = self._connect()
                break
            except Exception as exc:  # the socket is not there yet
                last_error = exc
                time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError(f"mariadbd did not accept connections ({last_error}):\n{self.read_error_log()}")
        log.info("mariadbd started on port %d, datadir %s", self.port, self.datadir)

    def _connect(self) -> Any:
        import pymysql

        return pymysql.connect(unix_socket=str(self.socket_path), user="root", autocommit=True,
                               charset="utf8mb4", max_allowed_packet=64 * 1024 * 1024)

    def stop(self) -> None:
        """Shut the server down (SIGTERM, then SIGKILL after 30 s)."""
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                log.debug("closing the connection failed", exc_info=True)
            self._conn = None
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def read_error_log(self) -> str:
        try:
            return self.error_log.read_text(errors="replace")[-8000:]
        except OSError as exc:
            return f"(no error log: {exc})"

    # -- SQL ------------------------------------------------------------------------------------
    def execute(self, sql: str, *params: Any) -> int:
        """Run one statement; return the affected row count."""
        with self._conn.cursor() as cur:
            return cur.execute(sql, params if params else None)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run one statement and return all result rows."""
        with self._conn.cursor() as cur:
            cur.execute(sql, params if params else None)
            return list(cur.fetchall())

    def set_global(self, name: str, value: str | int) -> None:
        """``SET GLOBAL name = value``; the current session picks it up too (it is re-opened)."""
        literal = value if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"
        self.execute(f"SET GLOBAL {name} = {literal}")
        self._conn.close()
        self._conn = self._connect()

    def flush_logs(self) -> None:
        self.execute("FLUSH BINARY LOGS")

    def binlog_files(self) -> list[Path]:
        """All binlog files of the server, oldest first (from SHOW BINARY LOGS)."""
        return [self.binlog_dir / row[0] for row in self.query("SHOW BINARY LOGS")]

    def run_workload(self, workload: Callable[[MariaDBServer], None] | Sequence[str],
                     settings: dict[str, str | int] | None = None, dest: Path | None = None) -> list[Path]:
        """Apply ``settings`` (global variables), rotate, run ``workload``, rotate, return its binlog file(s).

        ``workload`` is a list of SQL statements or a callable taking this server. The files are copied to
        ``dest`` when given (so later server activity cannot touch them).
        """
        for name, value in (settings or {}).items():
            self.set_global(name, value)
        self.flush_logs()
        before = {p.name for p in self.binlog_files()[:-1]}
        if callable(workload):
            workload(self)
        else:
            for statement in workload:
                self.execute(statement)
        self.flush_logs()
        files = [p for p in self.binlog_files()[:-1] if p.name not in before]
        if dest is not None:
            dest.mkdir(parents=True, exist_ok=True)
            copies = []
            for path in files:
                shutil.copyfile(path, dest / path.name)
                copies.append(dest / path.name)
            files = copies
        return files


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """A real MariaDB server for the whole test session (fails, never skips, if it cannot start)."""
    if shutil.which("mariadbd") is None or shutil.which("mariadb-install-db") is None:
        pytest.fail("mariadbd / mariadb-install-db not found: apt-get install mariadb-server mariadb-client")
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb"))
    try:
        server.start()
    except Exception as exc:
        pytest.fail(f"cannot start mariadbd: {exc}")
    try:
        yield server
    finally:
        server.stop()
