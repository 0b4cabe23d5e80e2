"""``spark-logsource follow|cat mariadb://user@host:port``: a live MariaDB 10.11 reached from the command line.

The URI scheme picks the replication format (no ``--source``); rows are compared with the batch reader over the
server's own binlog files for the same range.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
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
        with Writer(stream_server, seed=31) as writer:
            writer.wait_for(21)  # each transaction inserts at least one order: more than 20 rows
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


def _cat_live(stream_server: Any, written: Written, *extra: str, stdin: str | None = None,
              env: dict[str, str] | None = None, server_id: int) -> subprocess.CompletedProcess[str]:
    """``cat`` of the ``written`` range, with no password unless ``extra`` / stdin / env give one."""
    start, end = written.start, written.end
    args = [sys.executable, "-m", "spark_logsource.cli", "cat", stream_server.uri, "--table", "shop.orders",
            "--option", f"startingPosition={json.dumps({'file': start[0], 'pos': start[1]})}",
            "--option", f"endingPosition={json.dumps({'file': end[0], 'pos': end[1]})}",
            "--option", f"serverId={server_id}", *extra]
    environ = {k: v for k, v in os.environ.items() if k != "SPARK_LOGSOURCE_PASSWORD"}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=REPO, input=stdin,
                          env={**environ, **(env or {})})


@dataclass(frozen=True)
class Written:
    start: tuple[str, int]
    end: tuple[str, int]
    rows: list[tuple[Any, ...]]  # as the batch reader reads them from the server's files


@pytest.fixture(scope="module")
def written(stream_server: Any) -> Written:
    """Seven rows written between two positions."""
    stream_server.flush_logs()
    start = master_status(stream_server)
    for n in range(7):
        stream_server.execute("INSERT INTO shop.orders (customer, amount) VALUES (%s, %s)", f"pw-{n}", n * 1.25)
    stream_server.flush_logs()
    end = master_status(stream_server)
    return Written(start, end, files_between(stream_server, start, end))


@pytest.mark.parametrize("how", ["stdin", "environment"])
def test_password_from_stdin_or_environment(stream_server, written: Written, how: str) -> None:
    """--password-stdin and SPARK_LOGSOURCE_PASSWORD log in without the password on the command line (no
    warning, the password nowhere in the output); without either, the server refuses."""
    refused = _cat_live(stream_server, written, server_id=4311)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    if how == "stdin":
        done = _cat_live(stream_server, written, "--password-stdin", stdin=CDC_PASSWORD + "\n", server_id=4312)
    else:
        done = _cat_live(stream_server, written, env={"SPARK_LOGSOURCE_PASSWORD": CDC_PASSWORD}, server_id=4313)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [key(json.loads(line)) for line in done.stdout.splitlines()] == written.rows
    assert len(written.rows) == 7
    assert CDC_PASSWORD not in done.stderr + done.stdout
    assert "visible" not in done.stderr


def test_password_on_the_command_line_warns_once(stream_server, written: Written) -> None:
    done = _cat_live(stream_server, written, "--option", f"password={CDC_PASSWORD}", "--option",
                     f"PASSWORD={CDC_PASSWORD}", server_id=4314)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [key(json.loads(line)) for line in done.stdout.splitlines()] == written.rows
    warnings = [line for line in done.stderr.splitlines() if "visible to other users" in line]
    assert len(warnings) == 1 and "--password-stdin" in warnings[0] and "SPARK_LOGSOURCE_PASSWORD" in warnings[0]
    assert CDC_PASSWORD not in done.stderr


def test_sql_on_a_live_server_takes_the_password_from_the_environment(stream_server, written: Written) -> None:
    start, end = written.start, written.end
    args = [sys.executable, "-m", "spark_logsource.cli", "sql", "SELECT count(*) AS n FROM v WHERE `table` = 'orders'",
            "--view", f"v=mysql-replication:{stream_server.uri}", "--format", "json", "--master", "local[1]",
            "--option", f"v.startingPosition={json.dumps({'file': start[0], 'pos': start[1]})}",
            "--option", f"v.endingPosition={json.dumps({'file': end[0], 'pos': end[1]})}",
            "--option", "v.serverId=4315"]
    env = {**os.environ, "SPARK_LOGSOURCE_PASSWORD": CDC_PASSWORD, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [json.loads(line) for line in done.stdout.splitlines()] == [{"n": len(written.rows)}]
    assert CDC_PASSWORD not in done.stderr + done.stdout
