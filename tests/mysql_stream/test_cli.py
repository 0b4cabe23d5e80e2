"""``spark-logsource follow|cat mariadb://user@host:port``: a live MariaDB 10.11 reached from the command line.

The URI scheme picks the replication format (no ``--source``); rows are compared with the batch reader over the
server's own binlog files for the same range.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.cli_follow import FollowProcess

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]


def command(*args: str, server_id: int) -> list[str]:
    return [sys.executable, "-m", "spark_logsource.cli", *args, "--option", f"password={CDC_PASSWORD}",
            "--option", f"serverId={server_id}"]


def master_status(server: Any) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    def image(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    return (row["file"].rsplit("/", 1)[-1], row["pos"], row["table"], row["op"], row["row_index"],
            image(row["before"]), image(row["after"]))


def files_between(server: Any, start: tuple[str, int], end: tuple[str, int]) -> list[tuple[Any, ...]]:
    names = [p.name for p in server.binlog_files()]
    files = [str(server.binlog_dir / n) for n in names[names.index(start[0]):names.index(end[0]) + 1]]
    table = spark_logsource.read("mysql-binlog", files, startPosition=start[1], stopPosition=end[1],
                                 tables="shop.orders", rowFormat="json")
    return [key(r) for r in table.to_pylist()]


def test_follow_then_cat_a_live_server(stream_server) -> None:
    stream_server.flush_logs()
    start = master_status(stream_server)
    position = json.dumps({"file": start[0], "pos": start[1]})
    uri = stream_server.uri.replace("mysql://", "mariadb://", 1)
    with FollowProcess(command("follow", uri, "--table", "shop.orders", "--from", position, "--interval", "0.1",
                               server_id=4301)) as follow:
        with Writer(stream_server, seed=31):
            time.sleep(1.0)
        stream_server.flush_logs()
        end = master_status(stream_server)
        want = files_between(stream_server, start, end)
        follow.wait_for(len(want))
        code, err = follow.interrupt()
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and CDC_PASSWORD not in err
    assert len(want) > 20
    assert [key(json.loads(line)) for line in follow.lines] == want

    ending = json.dumps({"file": end[0], "pos": end[1]})
    done = subprocess.run(command("cat", stream_server.uri, "--table", "shop.orders", "--option",
                                  f"startingPosition={position}", "--option", f"endingPosition={ending}",
                                  server_id=4302), capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [key(json.loads(line)) for line in done.stdout.splitlines()] == want
