"""Tailing a growing WAL directory with the streaming layer (``follow_stream``, no Spark).

The directory is grown by copying the fixture segments in pieces, as a tablet server appends to its active
segment, closes it (footer) and starts the next one; the rows streamed must be those of a batch read of the
finished directory, each exactly once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from spark_logsource.api import make_format
from spark_logsource.errors import DataLossError
from spark_logsource.streaming.follow import follow_stream
from spark_logsource.streaming.stream import offset_json
from spark_logsource.yugabyte.reader import walk_segment
from tests.yugabyte.conftest import WAL_FIXTURES

TABLET = "table-00004000000030008000000000004006/tablet-5ba68dd7a2803d1dd057e02036f41959"
SRC = WAL_FIXTURES / TABLET
KEY_COLUMNS = ("tablet_id", "segment_seqno", "offset", "entry_in_batch", "term", "index", "op_type")


def _follow(directory: Path, start: dict[str, Any] | None = None, **options: Any) -> tuple[list[dict], dict]:
    opts = {"includeSuperseded": "true", **options}
    if start is not None:
        opts["startingPosition"] = offset_json(start)
    stream = make_format("yugabyte-wal", str(directory), opts).stream()
    rows: list[dict[str, Any]] = []
    end = start
    for batch, offset in follow_stream(stream, stop_when_idle=True):
        rows += batch.to_pylist()
        end = offset if offset is not None else end
    if end is None:
        end = stream.initial_offset()
    return rows, end


def _keys(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in KEY_COLUMNS) for r in rows]


def _batch_rows(directory: Path) -> list[dict[str, Any]]:
    fmt = make_format("yugabyte-wal", str(directory), {"includeSuperseded": "true"})
    return [r for b in fmt.iter_batches() for r in b.to_pylist()]


def test_growing_active_segment_then_rotation(tmp_path: Path) -> None:
    live = tmp_path / TABLET
    live.mkdir(parents=True)
    first = (SRC / "wal-000000001").read_bytes()
    second = (SRC / "wal-000000002").read_bytes()
    walk = walk_segment(str(SRC / "wal-000000001"))
    boundaries = [off for off, _ in walk.batches]
    # 1. the active segment holds four batches and half of the fifth (a write in progress), then zeros
    cut = boundaries[4] + 30
    (live / "wal-000000001").write_bytes(first[:cut] + bytes(4096))
    rows1, end1 = _follow(tmp_path)
    assert [r["index"] for r in rows1] == [1, 2, 3, 4, 5]
    pos = end1["tablets"][TABLET]
    assert (pos["seg"], pos["pos"], pos["index"]) == (1, boundaries[4], 5)
    # nothing new: the offset stays
    rows_again, end_again = _follow(tmp_path, end1)
    assert rows_again == [] and end_again == end1
    # 2. the batch is completed and two more are written (batches 4, 5, 6: indexes 6, 7, 8)
    (live / "wal-000000001").write_bytes(first[:boundaries[7]] + bytes(4096))
    rows2, end2 = _follow(tmp_path, end1)
    assert [r["index"] for r in rows2] == [6, 7, 8]
    # 3. the segment is closed (footer) and the next one is started, then grows to its end
    (live / "wal-000000001").write_bytes(first)
    (live / "wal-000000002").write_bytes(second[:walk_segment(str(SRC / "wal-000000002")).batches[1][0]]
                                         + bytes(8192))
    rows3, end3 = _follow(tmp_path, end2)
    (live / "wal-000000002").write_bytes(second)
    rows4, end4 = _follow(tmp_path, end3)
    assert end4["tablets"][TABLET]["seg"] == 2 and end4["tablets"][TABLET]["index"] == 15
    streamed = _keys(rows1 + rows2 + rows3 + rows4)
    assert len(streamed) == len(set(streamed))
    assert sorted(streamed) == sorted(_keys(_batch_rows(tmp_path)))
    assert json.loads(offset_json(end4))["kind"] == "yugabyte-wal"


def test_budget_splits_ranges_at_batch_boundaries(tmp_path: Path) -> None:
    shutil.copytree(WAL_FIXTURES, tmp_path / "wals", ignore=shutil.ignore_patterns("*.jsonl", "tablet-fdae*"))
    directory = tmp_path / "wals"
    fmt = make_format("yugabyte-wal", str(directory), {"includeSuperseded": "true", "maxRowsPerTrigger": "3"})
    stream = fmt.stream()
    start = stream.initial_offset()
    seen: list[tuple[Any, ...]] = []
    ranges = 0
    while True:
        end = stream.latest_offset(start, stream.default_budget())
        if offset_json(end) == offset_json(start):
            break
        assert stream.compare_offsets(start, end) == -1
        ranges += 1
        rows = [r for s in stream.plan(start, end) for b in stream.read_slice(s) for r in b.to_pylist()]
        assert 1 <= len(rows) <= 3 or len({r["offset"] for r in rows}) == 1
        seen += _keys(rows)
        start = end
    assert ranges >= 10
    assert sorted(seen) == sorted(_keys(_batch_rows(directory)))


def test_writes_view_resuming_mid_segment_knows_the_renamed_column(tmp_path: Path) -> None:
    """A range starting after the CHANGE_METADATA_OP still names columns with the new schema."""
    live = tmp_path / TABLET
    shutil.copytree(SRC, live, ignore=shutil.ignore_patterns("*.jsonl", "wal-000000002"))
    walk = walk_segment(str(live / "wal-000000001"))
    last = walk.batches[-1][0]  # the insert packed with schema version 1, after the rename
    stream = make_format("yugabyte-wal", str(tmp_path), {"view": "writes"}).stream()
    start = {"v": 1, "kind": "yugabyte-wal", "tablets": {TABLET: {"seg": 1, "file": "wal-000000001", "pos": last,
                                                                    "index": 11}}}
    end = stream.latest_offset(start, stream.default_budget())
    rows = [r for s in stream.plan(start, end) for b in stream.read_slice(s) for r in b.to_pylist()]
    assert len(rows) == 1 and rows[0]["schema_version"] == 1 and rows[0]["decode_error"] is None
    from spark_logsource.arrow.variant import decode_variant

    value = decode_variant(rows[0]["value"]["value"], rows[0]["value"]["metadata"])
    assert value["remark"] == "after rename"


def test_deleted_segment_is_data_loss(tmp_path: Path) -> None:
    live = tmp_path / TABLET
    shutil.copytree(SRC, live, ignore=shutil.ignore_patterns("*.jsonl"))
    stream = make_format("yugabyte-wal", str(tmp_path), {}).stream()
    start = stream.initial_offset()
    (live / "wal-000000001").unlink()
    with pytest.raises(DataLossError, match="wal-000000001"):
        stream.latest_offset(start, stream.default_budget())
    lenient = make_format("yugabyte-wal", str(tmp_path), {"failOnDataLoss": "false"}).stream()
    end = lenient.latest_offset(start, lenient.default_budget())
    rows = [r for s in lenient.plan(start, end) for b in lenient.read_slice(s) for r in b.to_pylist()]
    assert [r["index"] for r in rows] == [13, 14, 15]
