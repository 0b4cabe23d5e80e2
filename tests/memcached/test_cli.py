"""``spark-logsource cat|follow tap://host:port``: a TAP server reached from the command line.

The server is the loopback replay of conversations recorded with real servers (``replay.py``): it checks the
TAP_CONNECT bytes against the recorded ones and waits for every ACK the real server waited for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import spark_logsource
from tests.memcached.replay import Recording, ReplayServer, load_recording
from tests.support.cli_follow import FollowProcess

REPO = Path(__file__).resolve().parents[2]
COMPARED = ("seq", "opcode", "vbucket", "key", "flags", "expiry", "cas", "checkpoint_id", "vbucket_state")


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "spark_logsource.cli", *args]


def recorded_rows(rec: Recording, tmp_path: Path, conversation: int = 0) -> list[dict[str, Any]]:
    """What the server sent, read as a capture file (``*.tap``) through the Arrow API."""
    capture = tmp_path / f"{rec.name}.tap"
    capture.write_bytes(b"".join(rec.packets(conversation, "s2c")))
    table = spark_logsource.read("memcached-tap", str(capture), mode="FAILFAST")
    return table.select(list(COMPARED)).to_pylist()


def compared(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: r[k] for k in COMPARED} for r in rows]


def test_cat_of_a_live_dump(tmp_path: Path) -> None:
    """The URI scheme picks the format (no --source); --client-name is the memcached flag for the TAP name."""
    rec = load_recording("engine-pu-dump")
    with ReplayServer(rec) as server:
        done = subprocess.run(command("cat", server.uri, "--client-name", "fixture-dump", "--option", "ack=false"),
                              capture_output=True, text=True, timeout=120, cwd=REPO)
        server.wait_finished(1)
        assert server.logs[0].connect_matched, "TAP_CONNECT differs from the recorded one"
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    want = recorded_rows(rec, tmp_path)
    assert len(want) >= 3
    assert compared(rows) == want
    assert all(r["source"] == server.uri and r["offset"] is None for r in rows)


def test_follow_prints_live_changes_acks_as_recorded_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    rec = load_recording("couchbase-1.8.1-backfill_ckpt_ack_live")
    conn_name = bytes.fromhex(rec.header["tap_connect"][0]["name_hex"]).decode()
    want = recorded_rows(rec, tmp_path)
    with ReplayServer(rec, time_scale=0.01) as server, \
            FollowProcess(command("follow", server.uri, "--client-name", conn_name, "--from", "backfill",
                                  "--option", "registered=false", "--interval", "0.1")) as follow:
        follow.wait_for(len(want))
        code, err = follow.interrupt()  # anything after the last recorded packet would be a row too many
        server.wait_finished(1)
        log = server.logs[0]
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    assert log.connect_matched and log.mismatches == [] and log.extra == b""
    assert log.waiting_for is None, "the server waited for an ACK the command never sent"
    assert log.client_packets == rec.client_packets(0)
    rows = [json.loads(line) for line in follow.lines]
    assert len(want) > 5
    assert compared(rows) == want
    hint = err.split("--from '", 1)[1].split("'", 1)[0]
    assert json.loads(hint)["source"] == server.uri
