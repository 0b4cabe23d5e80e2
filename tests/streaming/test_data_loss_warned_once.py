"""``failOnDataLoss=false``: one warning per loss, not one per look at it (issue #21). A loss is met by the
driver's ``latest_offset`` and again when the same range is planned; the user reads about it once."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

import spark_logsource
from spark_logsource.api import make_format

BINLOGS = "mysql-binlog/mariadb-poc"  # one MariaDB server's binlogs (tests/fixtures/README.md)


def loss_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "data loss" in r.getMessage()]


def test_purged_binlog_is_warned_once(fixtures_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "binlogs"
    directory.mkdir()
    for f in sorted((fixtures_dir / BINLOGS).glob("domain_id_0_*")):
        shutil.copy(f, directory / f.name)
    names = sorted(p.name for p in directory.iterdir())
    start = make_format("mysql-binlog", str(directory), {}).stream().initial_offset()
    assert start["file"] == names[0]
    (directory / names[0]).unlink()  # purged before the stream read it
    expected = spark_logsource.read("mysql-binlog", [str(directory / n) for n in names[1:]]).num_rows
    with caplog.at_level(logging.WARNING):
        rows = sum(batch.num_rows for batch, _ in spark_logsource.follow(
            "mysql-binlog", str(directory), stop_when_idle=True, failOnDataLoss="false",
            startingPosition=json.dumps(start)))
    assert rows == expected
    said = loss_warnings(caplog)
    assert len(said) == 1, said
    assert names[0] in said[0]


def test_collected_xlog_is_warned_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.support.tarantool_writer import finished_wal

    directory = finished_wal(tmp_path / "wal", total=60, snapshot_every=20)
    xlogs = sorted(directory.glob("*.xlog"))
    start = make_format("tarantool-xlog", str(directory), {}).stream().initial_offset()
    assert start["file"] == xlogs[0].name
    xlogs[0].unlink()  # collected before the stream read it
    with caplog.at_level(logging.WARNING):
        rows = sum(batch.num_rows for batch, _ in spark_logsource.follow(
            "tarantool-xlog", str(directory), stop_when_idle=True, failOnDataLoss="false",
            startingPosition=json.dumps(start)))
    assert rows == spark_logsource.read("tarantool-xlog", [str(p) for p in xlogs[1:]]).num_rows
    said = loss_warnings(caplog)
    assert len(said) == 1, said
    assert xlogs[0].name in said[0]


def test_deleted_wal_segment_is_warned_once(fixtures_dir: Path, tmp_path: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    source = fixtures_dir / "yugabyte-wal/wals/table-00004000000030008000000000004006"
    directory = tmp_path / "wals" / source.name
    shutil.copytree(source, directory, ignore=shutil.ignore_patterns("*.jsonl"))
    start = make_format("yugabyte-wal", str(tmp_path / "wals"), {}).stream().initial_offset()
    first = sorted(directory.glob("tablet-*/wal-000000001"))
    assert len(first) == 2
    first[0].unlink()  # one tablet's first segment, deleted before the stream read it
    with caplog.at_level(logging.WARNING):
        list(spark_logsource.follow("yugabyte-wal", str(tmp_path / "wals"), stop_when_idle=True,
                                    failOnDataLoss="false", startingPosition=json.dumps(start)))
    said = loss_warnings(caplog)
    assert len(said) == 1, said
    assert first[0].parent.name in said[0]
