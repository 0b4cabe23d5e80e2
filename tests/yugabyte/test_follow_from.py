"""``follow --from`` / ``startingPosition`` on a YugabyteDB WAL directory (issue #21, finding 5): a segment that
does not exist, or a position past the end of a finished segment, is an error naming the segment and position; the
next segment, or a place in the active segment not written yet, is awaited with one log line, then read."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import SourceError
from spark_logsource.yugabyte.reader import walk_segment
from tests.support.cli_follow import REPO
from tests.support.follow_thread import FollowThread
from tests.yugabyte.conftest import WAL_FIXTURES

TABLET = "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959"
SRC = WAL_FIXTURES / TABLET
FIRST = SRC / "wal-000000001"  # closed: it ends with its footer
SECOND = SRC / "wal-000000002"  # the active one: entries, then preallocated zeros
KEYS = ("segment_seqno", "offset", "entry_in_batch", "term", "index", "op_type")


def _offset(seg: int, pos: int) -> dict[str, Any]:
    return {"v": 1, "kind": "yugabyte-wal",
            "tablets": {TABLET: {"seg": seg, "file": f"wal-{seg:09d}", "pos": pos, "index": None}}}


def _directory(tmp_path: Path, segments: dict[str, bytes]) -> Path:
    tablet = tmp_path / "wals" / TABLET
    tablet.mkdir(parents=True)
    for name, data in segments.items():
        (tablet / name).write_bytes(data)
    return tmp_path / "wals"


def _follow(directory: Path, start: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for batch, _ in spark_logsource.follow("yugabyte-wal", str(directory), stop_when_idle=True,
                                                     includeSuperseded="true", startingPosition=json.dumps(start))
            for r in batch.to_pylist()]


def _keys(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in KEYS) for r in rows)


def _waits(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]


def _both(tmp_path: Path) -> Path:
    return _directory(tmp_path, {"wal-000000001": FIRST.read_bytes(), "wal-000000002": SECOND.read_bytes()})


def test_a_segment_that_cannot_come_is_an_error(tmp_path: Path) -> None:
    directory = _both(tmp_path)
    with pytest.raises(SourceError) as info:
        _follow(directory, _offset(7, 0))  # segments are numbered one after the other: 3 comes first
    text = str(info.value)
    assert "wal-000000007" in text and TABLET in text and "wal-000000002" in text


def test_past_the_end_of_a_closed_segment_is_an_error(tmp_path: Path) -> None:
    directory = _both(tmp_path)
    pos = FIRST.stat().st_size + 1000
    with pytest.raises(SourceError, match="past the end of") as info:
        _follow(directory, _offset(1, pos))
    assert "wal-000000001" in str(info.value) and str(pos) in str(info.value)


def test_past_the_end_of_a_segment_followed_by_another_is_an_error(tmp_path: Path) -> None:
    """No footer (the server crashed while writing it), but the next segment is started: it is finished too."""
    first = FIRST.read_bytes()
    entries_end = walk_segment(str(FIRST)).batches[-1][0]
    crashed = first[:entries_end]  # its last batch torn, no footer
    directory = _directory(tmp_path, {"wal-000000001": crashed, "wal-000000002": SECOND.read_bytes()})
    pos = len(crashed) + 500
    with pytest.raises(SourceError, match="past the end of") as info:
        _follow(directory, _offset(1, pos))
    assert "wal-000000001" in str(info.value) and str(pos) in str(info.value)


def test_cli_follow_from_past_the_end_fails_instead_of_waiting(tmp_path: Path) -> None:
    directory = _both(tmp_path)
    pos = FIRST.stat().st_size + 1000
    proc = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "follow", str(directory), "--from",
                           json.dumps(_offset(1, pos))], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "past the end of" in proc.stderr and "wal-000000001" in proc.stderr and str(pos) in proc.stderr


def test_the_next_segment_is_awaited_then_read(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    directory = _directory(tmp_path, {"wal-000000001": FIRST.read_bytes()})
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        follower = FollowThread(monkeypatch, "yugabyte-wal", str(directory), includeSuperseded="true",
                                startingPosition=json.dumps(_offset(2, 0)))
        try:
            assert follower.wait_polls(5), "the follow loop did not poll"
            assert not follower.failed, follower.failed
            waits = _waits(caplog)
            assert len(waits) == 1, waits  # said once, not once per poll
            assert "wal-000000002" in waits[0] and TABLET in waits[0]
            (directory / TABLET / "wal-000000002").write_bytes(SECOND.read_bytes())  # the server rolls over
            expected = [r for r in spark_logsource.read("yugabyte-wal", str(directory),
                                                        includeSuperseded="true").to_pylist()
                        if r["segment_seqno"] == 2]
            assert expected
            assert follower.wait_rows(len(expected)), "the new segment's rows did not come"
        finally:
            follower.stop()
    assert not follower.failed, follower.failed
    assert _keys(follower.rows) == _keys(expected)


def test_a_place_not_written_yet_in_the_active_segment_is_awaited(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    first = FIRST.read_bytes()
    batches = [off for off, _ in walk_segment(str(FIRST)).batches]
    active = tmp_path / "wals" / TABLET / "wal-000000001"
    directory = _directory(tmp_path, {"wal-000000001": first[:batches[4]] + bytes(4096)})  # 4 batches written
    start = _offset(1, batches[6])
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        assert _follow(directory, start) == []
    waits = _waits(caplog)
    assert waits and "wal-000000001" in waits[0] and str(batches[6]) in waits[0] and TABLET in waits[0]
    active.write_bytes(first[:batches[7]] + bytes(4096))  # batches 5 and 6 are written
    expected = [r for r in spark_logsource.read("yugabyte-wal", str(directory), includeSuperseded="true").to_pylist()
                if r["offset"] == batches[6]]
    assert expected
    assert _keys(_follow(directory, start)) == _keys(expected)


def test_an_idle_stream_at_the_end_of_the_active_segment_says_nothing(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    directory = _both(tmp_path)
    ends = [o for _, o in spark_logsource.follow("yugabyte-wal", str(directory), stop_when_idle=True)
            if o is not None]
    assert ends
    with caplog.at_level(logging.WARNING, logger="spark_logsource"):
        assert _follow(directory, ends[-1]) == []
    assert _waits(caplog) == []


def test_a_segment_missing_between_two_that_exist_is_an_error(tmp_path: Path) -> None:
    """Segments are numbered one after the other and deleted oldest first: a hole is never written later."""
    directory = _directory(tmp_path, {"wal-000000001": FIRST.read_bytes(), "wal-000000003": SECOND.read_bytes()})
    with pytest.raises(SourceError) as info:
        _follow(directory, _offset(2, 0))
    text = str(info.value)
    assert "has no segment wal-000000002" in text and TABLET in text
