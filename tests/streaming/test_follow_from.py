"""``spark-logsource follow --from`` / ``startingPosition`` naming a place that cannot exist is an error at once;
a place that may still come is awaited with a log line saying what is awaited (never a silent wait)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import spark_logsource
from spark_logsource.errors import SourceError
from spark_logsource.streaming.stream import offset_json
from tests.support.cli_follow import REPO


def _offsets(directory: Path) -> list[dict]:
    """Every offset a follow of the directory gives (one per range: one range per xlog with a file budget)."""
    return [o for _, o in spark_logsource.follow("tarantool-xlog", str(directory), stop_when_idle=True,
                                                 maxFilesPerTrigger=1) if o is not None]


def _past_end_of(directory: Path, name: str) -> dict:
    base = next(o for o in _offsets(directory) if o.get("file") is not None)
    size = (directory / name).stat().st_size
    return {**base, "file": name, "pos": size + 1000}


def test_a_position_past_the_end_of_a_finished_xlog_is_an_error(finished_wal: Path) -> None:
    first = sorted(p.name for p in finished_wal.glob("*.xlog"))[0]
    start = _past_end_of(finished_wal, first)
    with pytest.raises(SourceError, match="past the end of") as info:
        list(spark_logsource.follow("tarantool-xlog", str(finished_wal), stop_when_idle=True,
                                    startingPosition=json.dumps(start)))
    assert first in str(info.value) and str(start["pos"]) in str(info.value)


def test_cli_follow_from_past_the_end_fails_instead_of_waiting(finished_wal: Path) -> None:
    last = sorted(p.name for p in finished_wal.glob("*.xlog"))[-1]  # no successor, but closed (EOF marker)
    start = _past_end_of(finished_wal, last)
    proc = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "follow", str(finished_wal),
                           "--from", offset_json(start)], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "past the end of" in proc.stderr and last in proc.stderr


def test_a_growing_xlog_is_awaited_with_a_log_line(tmp_path: Path, finished_wal: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """An xlog without its EOF marker may still grow: the stream waits for it, and says so once."""
    wal = tmp_path / "wal"
    wal.mkdir()
    last = sorted(finished_wal.glob("*.xlog"))[-1]
    data = last.read_bytes()
    assert data.endswith(b"\xd5\x10\xad\xed")
    (wal / last.name).write_bytes(data[:-4])  # as Tarantool leaves the active file
    start = {**_past_end_of(finished_wal, last.name), "pos": len(data) + 100}
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        for _ in range(2):
            assert list(spark_logsource.follow("tarantool-xlog", str(wal), stop_when_idle=True,
                                               startingPosition=json.dumps(start))) == []
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert waits and f"{last.name} to reach byte {start['pos']}" in waits[0]
