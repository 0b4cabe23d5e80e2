"""Two Tarantool 2.6 masters on loopback replicating from each other (a master-master replica set).

Master A bootstraps alone (replica id 1) and creates the reader's user and the space ``kv``; master B then joins
it with ``replication = {A, B}`` (replica id 2); last A is reconfigured with the same list, so each one
subscribes to the other. Both stay writable (``read_only = false``). Each has its own directory for WAL,
snapshots and log, a small ``wal_max_size`` so A's WAL spans several xlog files, and an admin console
(:class:`~tests.support.servers.tarantool_live.LiveTarantool` gives ``eval``, ``json``, ``vclock``).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from tests.support.servers.tarantool import server_log, tarantool_binary
from tests.support.servers.tarantool_live import PASSWORD, USER, LiveTarantool
from tests.support.waiting import STATE_TIMEOUT, expect

SPACE = "kv"
FIELDS = ["id", "owner", "n", "note"]

_BOOT = r"""
box.cfg{
    listen = '127.0.0.1:%(port)d',
    wal_dir = '%(dir)s', memtx_dir = '%(dir)s', vinyl_dir = '%(dir)s', work_dir = '%(dir)s',
    log = '%(dir)s/tarantool.log',
    replication = {%(replication)s},
    read_only = false,
    replication_timeout = 0.2,
    checkpoint_count = 100,
    wal_max_size = %(wal_max_size)d,
}
box.once('replicaset-test', function()
    box.schema.user.create('%(user)s', {password = '%(password)s'})
    box.schema.user.grant('%(user)s', 'replication')
    local s = box.schema.space.create('%(space)s', {format = {{'id', 'unsigned'}, {'owner', 'string'},
                                                               {'n', 'integer'},
                                                               {'note', 'string', is_nullable = true}}})
    s:create_index('pk')
end)
require('console').listen('unix/:%(dir)s/admin.sock')
"""


class Master(LiveTarantool):
    """One writable member of the replica set (``replication`` lists the peers' URIs, itself included)."""

    def __init__(self, directory: Path, wal_max_size: int = 8 << 10) -> None:
        super().__init__(directory, wal_max_size=wal_max_size)
        self.peers: list[int] = []

    @property
    def replication_uri(self) -> str:
        return f"{USER}:{PASSWORD}@127.0.0.1:{self.port}"

    def start(self, timeout: float = STATE_TIMEOUT) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        boot = self.directory / "boot.lua"
        replication = ", ".join(f"'{USER}:{PASSWORD}@127.0.0.1:{p}'" for p in self.peers)
        boot.write_text(_BOOT % {"port": self.port, "dir": str(self.directory), "replication": replication,
                                 "wal_max_size": self.wal_max_size, "user": USER, "password": PASSWORD,
                                 "space": SPACE})
        sock = self.directory / "admin.sock"
        self.proc = subprocess.Popen([tarantool_binary(), str(boot)], cwd=self.directory,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"tarantool exited with {self.proc.returncode}:\n{server_log(self.directory)}")
            if not sock.exists():
                return False
            try:
                self.eval("return box.info.status")
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except OSError:
                return False

        start = time.monotonic()
        expect(up, timeout, f"tarantool in {self.directory} to start")
        expect(lambda: self.value("box.info.status") == "running", timeout - (time.monotonic() - start),
               f"tarantool in {self.directory} to be running")

    def replica_id(self) -> int:
        return int(self.value("box.info.id"))

    def follows(self, other: Master) -> bool:
        """True when this instance's applier from ``other`` is in state ``follow``."""
        state = self.json(f"(function() local r = box.info.replication[{other.replica_id()}] "
                          "return r and r.upstream and r.upstream.status or 'none' end)()")
        return state == "follow"

    def has_all_of(self, other: Master) -> bool:
        """True when this instance's vclock holds every row ``other`` wrote itself."""
        theirs = other.replica_id()
        return self.vclock().get(theirs, 0) >= other.vclock().get(theirs, 0)


def start_pair(base: Path) -> tuple[Master, Master]:
    """A (id 1) and B (id 2), each following the other; both stopped again if the setup fails."""
    a, b = Master(base / "a"), Master(base / "b")
    try:
        a.start()
        b.peers = a.peers = [a.port, b.port]
        b.start()  # joins A: its replica id, the user and the space come from A
        a.eval(f"box.cfg{{replication = {{'{a.replication_uri}', '{b.replication_uri}'}}}}")
        expect(lambda: a.follows(b) and b.follows(a), STATE_TIMEOUT, "A and B to follow each other")
    except BaseException:
        b.stop(kill=True)
        a.stop(kill=True)
        raise
    return a, b
