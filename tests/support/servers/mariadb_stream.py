"""The streaming MariaDB 10.11: ROW format, ``binlog_row_metadata=FULL``, a small ``max_binlog_size`` and a replication
user with only REPLICATION SLAVE and BINLOG MONITOR; one per pytest session, lent to one test module at a time.

The session fixture ``stream_mariadb`` starts it when a module first asks for it. A module takes it with
:meth:`StreamServer.checkout`, which gives the module a server as if it were fresh, in the ways the streaming tests
notice: running (a module that stopped it and did not restart it is started again), the session's settings (a global
a module changed is set back), no reader of an earlier module attached (its binlog dump threads are killed), the
module's databases made anew, and a binlog directory holding one empty file (the earlier modules' files are purged,
so a read of "the whole directory" reads this module's writes). What it cannot give is a first file named
``mysql-bin.000001`` or an empty GTID state: a module that needs those, or stops, restarts or kills the server, has one
of its own (:func:`replica_user_server`), and so does one that must not share the session's.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.support.servers.mariadb import MariaDBServer
from tests.support.waiting import STATE_TIMEOUT, until

log = logging.getLogger(__name__)

CDC_USER = "cdc"
CDC_PASSWORD = "s3cret-Pw_42"
#: Small files: a writer rotates the binlog every few transactions.
MAX_BINLOG_SIZE = 16384
#: Globals a module may change (and should set back); :meth:`StreamServer.checkout` sets back any it did not.
RESTORED_GLOBALS = (
    "binlog_row_metadata", "max_binlog_size", "binlog_row_image", "binlog_format", "binlog_checksum",
    "binlog_annotate_row_events", "log_bin_compress", "net_write_timeout", "net_read_timeout", "sql_mode",
    "time_zone",
)


class StreamServer(MariaDBServer):
    """The test server, configured for streaming after every (re)start."""

    _settings: dict[str, str] | None = None

    def start(self) -> None:
        super().start()
        self.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        self.execute(f"SET GLOBAL max_binlog_size = {MAX_BINLOG_SIZE}")
        self._conn.close()
        self._conn = self._connect()

    @property
    def uri(self) -> str:
        return f"mysql://{CDC_USER}@127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def purge_all_but_newest(self, older_than: str) -> str:
        """PURGE BINARY LOGS up to the newest file until ``older_than`` is gone (the server keeps files InnoDB or a
        dump thread still needs for a moment); returns the oldest file left."""
        def purged() -> bool:
            newest = self.binlog_files()[-1].name
            self.execute(f"PURGE BINARY LOGS TO '{newest}'")
            return self.binlog_files()[0].name > older_than

        until(purged, STATE_TIMEOUT, interval=0.05)
        return self.binlog_files()[0].name

    def reset_tables(self) -> None:
        self.execute("CREATE DATABASE IF NOT EXISTS shop")
        self.execute("CREATE DATABASE IF NOT EXISTS other")
        self.execute("CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY AUTO_INCREMENT, "
                     "customer VARCHAR(64), amount DECIMAL(12,2), note TEXT, at DATETIME(3))")
        self.execute("CREATE TABLE IF NOT EXISTS shop.items (id INT PRIMARY KEY AUTO_INCREMENT, order_id INT, "
                     "sku VARCHAR(32), qty SMALLINT UNSIGNED)")
        self.execute("CREATE TABLE IF NOT EXISTS other.log (id INT PRIMARY KEY AUTO_INCREMENT, msg VARCHAR(200))")

    def add_replica_user(self) -> None:
        """The CDC user: may read the binlogs as a replica (REPLICATION SLAVE, and BINLOG MONITOR for SHOW BINLOG
        EVENTS)."""
        self.execute(f"CREATE USER IF NOT EXISTS '{CDC_USER}'@'%' IDENTIFIED BY '{CDC_PASSWORD}'")
        self.execute(f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{CDC_USER}'@'%'")

    def fresh_database(self, name: str, *, cdc_select: bool) -> None:
        """Database ``name`` made anew (empty); the CDC user may SELECT its tables if ``cdc_select`` (SHOW CREATE
        TABLE needs it)."""
        self.execute(f"DROP DATABASE IF EXISTS {name}")
        self.execute(f"CREATE DATABASE {name}")
        if cdc_select:
            self.execute(f"GRANT SELECT ON {name}.* TO '{CDC_USER}'@'%'")

    # -- sharing -----------------------------------------------------------------------------------
    def _globals(self) -> dict[str, str]:
        names = ", ".join(f"'{name}'" for name in RESTORED_GLOBALS)
        return {str(k).lower(): str(v) for k, v in self.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                                               f"({names})")}

    def remember_settings(self) -> None:
        """Take the globals of :data:`RESTORED_GLOBALS` now as the ones every module starts with."""
        self._settings = self._globals()

    def _dump_threads(self) -> list[int]:
        return [int(row[0]) for row in self.query("SHOW PROCESSLIST") if str(row[4]).startswith("Binlog Dump")]

    def checkout(self, databases: Mapping[str, bool]) -> None:
        """Lend the shared server to the next module: see the module docstring. ``databases`` maps each database the
        module writes to whether the CDC user may SELECT its tables."""
        if not self.running:
            log.warning("the shared streaming MariaDB was left stopped by the last module: starting it again")
            self.start()
        else:
            self._conn.close()  # a module may have left a session setting or a killed connection behind
            self._conn = self._connect()
        for thread_id in self._dump_threads():
            with contextlib.suppress(Exception):  # it may have ended meanwhile
                self.execute(f"KILL {thread_id}")
        # a killed dump thread holds its binlog file until it has gone
        if not until(lambda: not self._dump_threads(), STATE_TIMEOUT, interval=0.05):
            raise RuntimeError(f"binlog dump threads of an earlier module did not end: {self._dump_threads()}")
        changed = {k: v for k, v in (self._settings or {}).items() if self._globals().get(k) != v}
        for name, value in changed.items():
            log.warning("setting back global %s = %r (the last module changed it)", name, value)
            literal = value if value.isdigit() else "'" + value.replace("'", "''") + "'"
            self.execute(f"SET GLOBAL {name} = {literal}")
        if changed:
            self._conn.close()
            self._conn = self._connect()
        for name, cdc_select in databases.items():
            self.fresh_database(name, cdc_select=cdc_select)
        self.flush_logs()
        newest = self.binlog_files()[-1].name
        oldest = self.purge_all_but_newest(older_than=self.binlog_files()[-2].name)
        if oldest != newest:
            raise RuntimeError(f"the binlogs of earlier modules could not be purged: the oldest left is {oldest}")


@contextlib.contextmanager
def replica_user_server(tmp_path_factory: pytest.TempPathFactory, name: str,
                        database: str | None = None) -> Iterator[StreamServer]:
    """A started MariaDB of its own whose CDC user may read the binlogs as a replica and, given ``database``, SELECT
    its tables; stopped after."""
    server = StreamServer(Path(tmp_path_factory.mktemp(name)))
    try:
        server.start()
    except Exception as exc:
        pytest.fail(f"cannot start mariadbd: {exc}")
    try:
        server.add_replica_user()
        if database is not None:
            server.execute(f"CREATE DATABASE {database}")
            server.execute(f"GRANT SELECT ON {database}.* TO '{CDC_USER}'@'%'")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def stream_mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    """The session's streaming MariaDB (started on first use); a module takes it through a module fixture that calls
    :meth:`StreamServer.checkout`, never directly."""
    with replica_user_server(tmp_path_factory, "mariadb-stream-shared") as server:
        server.remember_settings()
        yield server

