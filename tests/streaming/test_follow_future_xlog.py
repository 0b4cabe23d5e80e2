"""``follow --from`` / ``startingPosition`` naming an xlog named after every file of the directory (issue #21,
finding 5): a position beyond everything written may still come, so it is awaited with one log line (never
reported as data loss, never a silent wait); one that can never come (rows past its vclock are already written)
is an error. A file collected before it was read stays data loss (``tests/tarantool/test_tail.py``)."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import DataLossError, SourceError
from spark_logsource.tarantool.xlog.meta import read_meta
from tests.support.cli_follow import REPO
from tests.support.follow_thread import FollowThread
from tests.support.waiting import until


def _start_of(xlog: Path) -> dict[str, Any]:
    """The offset of the first block of ``xlog`` (where a stream stands after crossing into it)."""
    with xlog.open("rb") as f:
        meta = read_meta(f, str(xlog))
    return {"v": 1, "kind": "tarantool-xlog", "instance": meta.instance_uuid, "file": xlog.name,
            "pos": meta.data_offset, "vclock": {str(r): lsn for r, lsn in sorted(meta.vclock.items())}}


def _without_last(finished_wal: Path, wal: Path) -> Path:
    """A copy of the directory before its newest xlog holding rows was created; that xlog is returned."""
    xlogs = sorted(finished_wal.glob("*.xlog"))
    with_rows = [p for p in xlogs if spark_logsource.read("tarantool-xlog", [str(p)]).num_rows]
    wal.mkdir()
    for p in xlogs[:xlogs.index(with_rows[-1])]:
        shutil.copy(p, wal / p.name)
    return with_rows[-1]


def _row_keys(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((r["replica_id"], r["lsn"]) for r in rows)


def _waits(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]


def test_next_xlog_not_written_yet_is_awaited_then_read(tmp_path: Path, finished_wal: Path,
                                                        caplog: pytest.LogCaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    wal = tmp_path / "wal"
    last = _without_last(finished_wal, wal)
    expected = _row_keys(spark_logsource.read("tarantool-xlog", [str(last)]).to_pylist())
    assert expected
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        follower = FollowThread(monkeypatch, "tarantool-xlog", str(wal), startingPosition=json.dumps(_start_of(last)))
        try:
            assert follower.wait_polls(5), "the follow loop did not poll"
            assert not follower.failed, follower.failed
            waits = _waits(caplog)
            assert len(waits) == 1, waits  # said once, not once per poll
            assert last.name in waits[0] and "data loss" not in caplog.text
            shutil.copy(last, wal / last.name)  # the instance opens its next xlog
            assert follower.wait_rows(len(expected)), "the new xlog's rows did not come"
        finally:
            follower.stop()
    assert not follower.failed, follower.failed
    assert _row_keys(follower.rows) == expected


def test_cli_follow_from_a_future_xlog_waits_and_says_so(tmp_path: Path, finished_wal: Path) -> None:
    wal = tmp_path / "wal"
    last = _without_last(finished_wal, wal)
    expected = spark_logsource.read("tarantool-xlog", [str(last)]).num_rows
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "spark_logsource.cli", "follow", str(wal), "--interval",
                                 "0.05", "--from", json.dumps(_start_of(last))],
                                stdout=subprocess.PIPE, stderr=err, cwd=REPO)
        lines: list[bytes] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
        reader.start()
        try:
            assert until(lambda: "waiting for" in stderr.read_text() or proc.poll() is not None)
            assert proc.poll() is None, stderr.read_text()  # still following: no error
            said = stderr.read_text()
            assert last.name in said and "data loss" not in said.lower()
            shutil.copy(last, wal / last.name)
            assert until(lambda: len(lines) >= expected or proc.poll() is not None), stderr.read_text()
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        reader.join(timeout=10)
    assert len(lines) == expected
    assert sum("waiting for" in line for line in stderr.read_text().splitlines()) == 1


def test_a_future_xlog_behind_rows_already_written_is_an_error(tmp_path: Path, finished_wal: Path) -> None:
    """An xlog named after the newest one, yet starting at a vclock the newest one's rows went past: the instance
    can never write it (a position from another directory, or mistyped)."""
    wal = tmp_path / "wal"
    last = _without_last(finished_wal, wal)
    newest = sorted(wal.glob("*.xlog"))[-1]
    start = {**_start_of(newest), "file": last.name}  # the newest file's first vclock, a later file's name
    with pytest.raises(SourceError) as info:
        list(spark_logsource.follow("tarantool-xlog", str(wal), stop_when_idle=True,
                                    startingPosition=json.dumps(start)))
    assert not isinstance(info.value, DataLossError)
    text = str(info.value)
    assert last.name in text and newest.name in text and "can never" in text
