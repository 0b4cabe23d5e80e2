"""``spark_logsource.follow()``'s offsets used as the README says: commit the work with each offset given, crash
between two batches of one range, resume from the last offset committed — no row missed, none doubled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import spark_logsource
from spark_logsource.streaming.stream import offset_json

COLUMNS = ["file", "offset", "lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple", "ops"]


class Crash(RuntimeError):
    pass


class Consumer:
    """A transactional sink: rows are staged, and written with the offset when a batch carries one."""

    def __init__(self) -> None:
        self.committed_rows: list[tuple] = []
        self.committed_offset: dict[str, Any] | None = None
        self.staged: list[tuple] = []
        self.batches = 0

    def run(self, directory: Path, crash_after: int | None, **options: Any) -> None:
        start = {} if self.committed_offset is None else {"startingPosition": offset_json(self.committed_offset)}
        self.staged = []  # a crash loses what was not committed
        for batch, offset in spark_logsource.follow("tarantool-xlog", str(directory), stop_when_idle=True,
                                                    tupleFormat="json", **start, **options):
            self.staged += [tuple(r[c] for c in COLUMNS) for r in batch.select(COLUMNS).to_pylist()]
            self.batches += 1
            if offset is not None:
                self.committed_rows += self.staged
                self.staged = []
                self.committed_offset = offset
            if self.batches == crash_after:
                raise Crash


def test_a_crash_between_batches_of_one_range_loses_nothing(finished_wal: Path, expected_rows: Any) -> None:
    want = expected_rows(sorted(finished_wal.glob("*.xlog")))
    consumer = Consumer()
    try:  # batchSize 7: the one range of the whole directory comes in many batches
        consumer.run(finished_wal, crash_after=1, batchSize=7)
    except Crash:
        pass
    else:
        raise AssertionError("the first run should have crashed after its first batch")
    consumer.run(finished_wal, crash_after=None, batchSize=7)
    got = consumer.committed_rows
    assert len(got) == len(want) > 100
    assert sorted(got) == want, "every row once"


def test_only_the_last_batch_of_a_range_carries_its_offset(finished_wal: Path) -> None:
    out = list(spark_logsource.follow("tarantool-xlog", str(finished_wal), stop_when_idle=True, batchSize=7,
                                      maxRowsPerTrigger=40))
    offsets = [o for _, o in out]
    assert offsets[-1] is not None and len(out) > len([o for o in offsets if o is not None]) > 1
    # each offset given resumes exactly after the rows before it
    seen = 0
    for i, (batch, offset) in enumerate(out):
        seen += len(batch)
        if offset is None:
            continue
        rest = sum(len(b) for b, _ in spark_logsource.follow(
            "tarantool-xlog", str(finished_wal), stop_when_idle=True, startingPosition=json.dumps(offset)))
        assert seen + rest == sum(len(b) for b, _ in out), f"offset of batch {i}"


def test_a_range_whose_rows_are_all_filtered_still_moves_the_offset(finished_wal: Path) -> None:
    out = list(spark_logsource.follow("tarantool-xlog", str(finished_wal), stop_when_idle=True, spaceId=99999))
    assert out and all(len(b) == 0 for b, _ in out) and out[-1][1] is not None
