"""Fixtures of the streaming tests: WAL directories written by the real Tarantool 2.6."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.streaming import batch_reader_rows
from tests.support.tarantool_writer import start_writer


@pytest.fixture(scope="session")
def finished_wal(tmp_path_factory) -> Path:
    """A WAL directory whose writer has exited: several closed xlogs (rotations and snapshots)."""
    writer = start_writer(tmp_path_factory.mktemp("streaming") / "wal", total=150, period=0, snapshot_every=50,
                          wait=True)
    writer.finish()
    assert len(writer.xlogs()) >= 3
    return writer.directory


@pytest.fixture
def expected_rows():
    return batch_reader_rows
