"""Fixtures of the streaming tests: WAL directories written by the real Tarantool 2.6."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.streaming import batch_reader_rows
from tests.support.tarantool_writer import finished_wal as write_finished_wal


@pytest.fixture(scope="session")
def finished_wal(tmp_path_factory) -> Path:
    """A WAL directory whose writer has exited: several closed xlogs (rotations and snapshots)."""
    return write_finished_wal(tmp_path_factory.mktemp("streaming") / "wal", total=150, snapshot_every=50)


@pytest.fixture
def expected_rows():
    return batch_reader_rows
