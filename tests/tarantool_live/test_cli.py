"""``spark-logsource cat|follow tarantool://user@host:port``: a live Tarantool 2.6 reached from the command line.

The URI scheme picks the replication format (no ``--source``); rows are compared with the server's own xlog files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_follow import FollowProcess
from tests.support.servers.tarantool_live import PASSWORD, LiveTarantool
from tests.support.tarantool_live import MIXED_WORKLOAD, directory_rows

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "spark_logsource.cli", *args, "--option", f"password={PASSWORD}",
            "--option", "readTimeout=30"]  # bounds a hang; a loaded server may answer late


def key(row: dict) -> tuple:
    return row["lsn"], row["type"], row["space_id"], json.dumps(row["tuple"], sort_keys=True)


def expected(server: LiveTarantool, start: dict[int, int], end: dict[int, int], space: int) -> list[tuple]:
    rows = directory_rows(server.directory, start, end, "json")
    return [key({**r, "tuple": None if r["tuple"] is None else json.loads(r["tuple"])})
            for r in rows if r["space_id"] == space]


def test_follow_a_live_server_then_cat_the_same_range(live_server: LiveTarantool) -> None:
    space = int(live_server.value("box.space.t.id"))
    start = live_server.vclock()
    with FollowProcess(command("follow", live_server.uri, "--space", str(space), "--from",
                               json.dumps({str(k): v for k, v in start.items()}), "--interval", "0.1")) as follow:
        live_server.eval(MIXED_WORKLOAD)
        end = live_server.vclock()
        want = expected(live_server, start, end, space)
        follow.wait_for(len(want))
        code, err = follow.interrupt()
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and "--from '" in err
    rows = [json.loads(line) for line in follow.lines]
    assert len(want) >= 90  # 50 inserts, 5 changes, 31 in one transaction, ... (MIXED_WORKLOAD)
    assert [key(r) for r in rows] == want
    assert all(isinstance(r["tuple"], list) for r in rows if r["type"] in ("INSERT", "REPLACE"))

    # cat of the same server reads from the oldest checkpoint it keeps to now: the followed rows are among them
    done = subprocess.run(command("cat", live_server.uri, "--space", str(space)),
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    cat_rows = [key(json.loads(line)) for line in done.stdout.splitlines()]
    assert [r for r in cat_rows if r[0] > start.get(1, 0)] == want
