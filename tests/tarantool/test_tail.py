"""Tailing a WAL directory without Spark: exactly-once ranges over a live writer, partial and corrupt tails.

Every directory here was written by the real Tarantool 2.6 (``tests/support/tarantool_writer.py``); the oracle
is the batch reader over the same files, itself checked against Tarantool's ``xlog.pairs()``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.errors import CorruptDataError, DataLossError, OptionError, SourceError
from spark_logsource.streaming.stream import ReadBudget, offset_json
from spark_logsource.tarantool.stream import tail as tail_module
from spark_logsource.tarantool.xlog.blocks import EOF_MAGIC, FIXHEADER_SIZE, parse_fixheader
from spark_logsource.tarantool.xlog.meta import parse_meta
from tests.support.tarantool_writer import finished_wal, start_writer

KEY_COLUMNS = ["file", "offset", "lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple", "ops"]


def rows_of(batches) -> list[dict]:
    return [r for b in batches for r in b.select(KEY_COLUMNS).to_pylist()]


def sort_key(row: dict) -> tuple:
    return (row["file"], row["offset"], row["replica_id"] or 0, row["lsn"] or 0)


def batch_rows(files: list[Path], **options) -> list[dict]:
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in files], tupleFormat="json", **options)
    return sorted(table.select(KEY_COLUMNS).to_pylist(), key=sort_key)


def read_range(stream, start, end) -> list[dict]:
    return rows_of(b for s in stream.plan(start, end) for b in stream.read_slice(s))


def block_offsets(path: Path) -> list[int]:
    """Fixheader offsets of the blocks of a closed xlog, by walking the file's own framing."""
    data = path.read_bytes()
    pos = parse_meta(data[:8192], str(path)).data_offset
    out = []
    while pos < len(data) and data[pos:pos + 4] != EOF_MAGIC:
        out.append(pos)
        pos += FIXHEADER_SIZE + parse_fixheader(data[pos:pos + FIXHEADER_SIZE]).length
    return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A directory written by a writer that has exited: several closed xlogs (rotation and snapshots)."""
    return finished_wal(tmp_path_factory.mktemp("tail") / "wal", total=120, snapshot_every=40)


def copy_xlogs(src: Path, dst: Path) -> list[Path]:
    dst.mkdir()
    for p in sorted(src.glob("*.xlog")):
        shutil.copy(p, dst / p.name)
    return sorted(dst.glob("*.xlog"))


def test_follow_live_writer_resuming_gives_every_row_once(tmp_path):
    writer = start_writer(tmp_path / "wal", total=300, period=0.004, snapshot_every=70)
    writer.wait_for_xlog()
    got: list[dict] = []
    offsets: list[dict] = []
    position = "earliest"
    for run in range(12):
        if run == 10:
            writer.finish()  # all written; the exit closes the active xlog, the last runs drain it
        # Each run resumes from the offset the previous one ended at, as a restarted reader would.
        for batch, offset in spark_logsource.follow("tarantool-xlog", str(writer.directory), stop_when_idle=True,
                                                    startingPosition=position, maxRowsPerTrigger=37,
                                                    tupleFormat="json"):
            got.extend(rows_of([batch]))
            if offset is not None:  # only a range's last batch carries a position to resume from
                offsets.append(offset)
                position = offset_json(offset)
        time.sleep(0.1)
    expected = batch_rows(writer.xlogs())
    assert len(expected) > 700
    assert sorted(got, key=sort_key) == expected
    assert len({(r["replica_id"], r["lsn"]) for r in got}) == len(got)  # no duplicates
    # Offsets only move forward, and every one is a block boundary (or a file's first block / EOF marker).
    keys = [(o["file"], o["pos"]) for o in offsets]
    assert keys == sorted(keys)
    for file, pos in set(keys):
        path = writer.directory / file
        assert pos in block_offsets(path) or path.read_bytes()[pos:pos + 4] == EOF_MAGIC or pos == path.stat().st_size


def test_budget_rounds_up_to_transactions_and_stays_contiguous(finished):
    stream = make_format("tarantool-xlog", str(finished), {"tupleFormat": "json"}).stream()
    start = stream.initial_offset()
    got, sizes = [], []
    while True:
        end = stream.latest_offset(start, ReadBudget(max_rows=10))
        if offset_json(end) == offset_json(start):
            break
        rows = read_range(stream, start, end)
        # A range is whole transactions: it ends on a committed row (or a single-statement one without tsn).
        assert rows[-1]["is_commit"] or rows[-1]["tsn"] is None
        # Positions are block boundaries: the budget is kept, or rounded up to the one block that exceeds it.
        assert len(rows) <= 10 or len({(r["file"], r["offset"]) for r in rows}) == 1
        sizes.append(len(rows))
        got.extend(rows)
        start = end
    assert sorted(got, key=sort_key) == batch_rows(sorted(finished.glob("*.xlog")))
    assert len(sizes) > 10


def test_max_files_and_bytes_budgets(finished):
    stream = make_format("tarantool-xlog", str(finished), {"maxFilesPerTrigger": 1, "maxBytesPerTrigger": "1m"}
                         ).stream()
    assert stream.default_budget() == ReadBudget(max_bytes=1 << 20, max_files=1)
    start = stream.initial_offset()
    files_per_range = []
    while True:
        end = stream.latest_offset(start, stream.default_budget())
        if offset_json(end) == offset_json(start):
            break
        files_per_range.append({s.uri for s in stream.plan(start, end)})
        start = end
    assert all(len(f) == 1 for f in files_per_range)
    assert len(files_per_range) >= len(list(finished.glob("*.xlog"))) - 1


def _active_copy(finished: Path, dst: Path) -> tuple[Path, bytes]:
    """Copies of the closed xlogs, the last one without its EOF marker (as while Tarantool writes it)."""
    files = copy_xlogs(finished, dst)
    active = max((p for p in files if len(block_offsets(p)) >= 4), key=lambda p: p.name)
    for p in files:  # drop the files after it: `active` is the newest
        if p.name > active.name:
            p.unlink()
    data = active.read_bytes()
    assert data.endswith(EOF_MAGIC)
    active.write_bytes(data[:-4])
    return active, data[:-4]


def test_partial_last_block_is_never_emitted(finished, tmp_path):
    active, whole = _active_copy(finished, tmp_path / "wal")
    blocks = block_offsets(finished / active.name)
    last = blocks[-1]
    stream = make_format("tarantool-xlog", str(active.parent), {"tupleFormat": "json"}).stream()
    start = stream.initial_offset()
    expected = batch_rows(sorted(active.parent.glob("*.xlog")))
    for cut in (last + 3, last + FIXHEADER_SIZE - 1, last + FIXHEADER_SIZE + 5, len(whole) - 1):
        active.write_bytes(whole[:cut])
        end = stream.latest_offset(start, ReadBudget())
        assert end["file"] == active.name and end["pos"] == last  # stops before the half-written block
        rows = read_range(stream, start, end)
        assert sorted(rows, key=sort_key) == [r for r in expected if (r["file"], r["offset"]) < (str(active), last)]
    active.write_bytes(whole)  # the block is complete now
    end2 = stream.latest_offset(end, ReadBudget())
    assert end2["pos"] == len(whole)
    tail_rows = read_range(stream, end, end2)
    assert tail_rows and {r["offset"] for r in tail_rows} == {last}
    assert sorted(rows + tail_rows, key=sort_key) == expected


def test_corrupt_block_in_active_file_follows_the_parse_mode(finished, tmp_path):
    active, whole = _active_copy(finished, tmp_path / "wal")
    blocks = block_offsets(finished / active.name)
    bad = blocks[-3]  # a block with good blocks after it
    damaged = bytearray(whole)
    damaged[bad + FIXHEADER_SIZE + 2] ^= 0xFF
    active.write_bytes(bytes(damaged))
    expected = [r for r in batch_rows(sorted(active.parent.glob("*.xlog"))) if r["offset"] != bad
                or r["file"] != str(active)]
    stream = make_format("tarantool-xlog", str(active.parent), {"tupleFormat": "json"}).stream()
    start = stream.initial_offset()
    end = stream.latest_offset(start, ReadBudget())
    assert end["pos"] == len(whole)
    batches = [b for s in stream.plan(start, end) for b in stream.read_slice(s)]
    table = pa.Table.from_batches(batches)
    corrupt = table.filter(pa.compute.invert(pa.compute.is_null(table["_corrupt_record"]))).to_pylist()
    assert [(r["file"], r["offset"]) for r in corrupt] == [(str(active), bad)]
    assert "checksum" in corrupt[0]["_corrupt_record"]
    good = [r for r in rows_of(batches) if r["lsn"] is not None]
    assert sorted(good, key=sort_key) == expected
    failfast = make_format("tarantool-xlog", str(active.parent), {"mode": "FAILFAST"}).stream()
    with pytest.raises(CorruptDataError) as err:
        for s in failfast.plan(start, end):
            list(failfast.read_slice(s))
    assert err.value.offset == bad and err.value.path == str(active)


def test_corrupt_last_block_waits_until_the_file_is_closed(finished, tmp_path):
    active, whole = _active_copy(finished, tmp_path / "wal")
    last = block_offsets(finished / active.name)[-1]
    damaged = bytearray(whole)
    damaged[last + FIXHEADER_SIZE + 2] ^= 0xFF
    active.write_bytes(bytes(damaged))
    stream = make_format("tarantool-xlog", str(active.parent), {"tupleFormat": "json"}).stream()
    start = stream.initial_offset()
    end = stream.latest_offset(start, ReadBudget())
    assert end["pos"] == last  # could still be a write in progress: not emitted yet
    active.write_bytes(bytes(damaged) + EOF_MAGIC)
    nxt = finished / sorted(p.name for p in finished.glob("*.xlog") if p.name > active.name)[0]
    shutil.copy(nxt, active.parent / nxt.name)  # a newer file: the old one is closed, its bad tail is final
    end2 = stream.latest_offset(end, ReadBudget())
    assert end2["file"] == nxt.name
    table = pa.Table.from_batches([b for s in stream.plan(end, end2) for b in stream.read_slice(s)])
    corrupt = [r for r in table.to_pylist() if r["_corrupt_record"] is not None]
    assert [(r["file"], r["offset"]) for r in corrupt] == [(str(active), last)]


def test_inprogress_and_snapshot_files_are_ignored(finished, tmp_path):
    copy_xlogs(finished, tmp_path / "wal")
    snap = sorted(finished.glob("*.snap"))[-1]
    (tmp_path / "wal" / (snap.name + ".inprogress")).write_bytes(snap.read_bytes()[:1000])
    shutil.copy(snap, tmp_path / "wal" / snap.name)
    (tmp_path / "wal" / "99999999999999999999.xlog.inprogress").write_bytes(b"XLOG\n0.13\n")
    got = rows_of(b for b, _ in spark_logsource.follow("tarantool-xlog", str(tmp_path / "wal"),
                                                        stop_when_idle=True, tupleFormat="json"))
    assert sorted(got, key=sort_key) == batch_rows(sorted((tmp_path / "wal").glob("*.xlog")))
    assert {r["file"].rsplit(".", 1)[-1] for r in got} == {"xlog"}


def test_collected_file_is_data_loss_unless_allowed(tmp_path, caplog):
    writer = start_writer(tmp_path / "wal", total=160, period=0.002, snapshot_every=30,
                          cfg={"checkpoint_count": 1})
    writer.wait_for_xlog()
    stream = make_format("tarantool-xlog", str(writer.directory), {}).stream()
    first = stream.initial_offset()
    assert first["file"] == "00000000000000000000.xlog"
    writer.finish()
    assert not (writer.directory / first["file"]).exists()  # collected after the snapshots
    with pytest.raises(DataLossError) as err:
        stream.latest_offset(first, ReadBudget())
    oldest = writer.xlogs()[0]
    assert first["file"] in str(err.value) and "vclock {}" in str(err.value)
    assert "failOnDataLoss" in str(err.value)
    assert stream.compare_offsets(first, stream.initial_offset()) < 0
    lenient = make_format("tarantool-xlog", str(writer.directory),
                          {"failOnDataLoss": "false", "tupleFormat": "json"}).stream()
    with caplog.at_level("WARNING"):
        end = lenient.latest_offset(first, ReadBudget())
    assert "data loss" in caplog.text
    rows = read_range(lenient, first, end)
    assert sorted(rows, key=sort_key) == batch_rows(writer.xlogs())
    assert rows[0]["file"] == str(oldest)


def test_file_read_to_its_end_may_be_collected(finished, tmp_path):
    files = copy_xlogs(finished, tmp_path / "wal")
    stream = make_format("tarantool-xlog", str(tmp_path / "wal"), {}).stream()
    # The position a reader holds after reading the first file whole: its EOF marker.
    eof = files[0].stat().st_size - len(EOF_MAGIC)
    start = stream.initial_offset()
    at_end = stream.latest_offset(start, ReadBudget(max_files=1))
    assert (at_end["file"], at_end["pos"]) in ((files[0].name, eof), (files[1].name, at_end["pos"]))
    files[0].unlink()
    end = stream.latest_offset(at_end, ReadBudget())  # no DataLossError: nothing unread was removed
    assert end["file"] == files[-1].name


def test_file_vanishing_before_read_is_reported(finished, tmp_path):
    files = copy_xlogs(finished, tmp_path / "wal")
    stream = make_format("tarantool-xlog", str(tmp_path / "wal"), {}).stream()
    start = stream.initial_offset()
    end = stream.latest_offset(start, ReadBudget())
    slices = list(stream.plan(start, end))
    files[0].unlink()
    with pytest.raises(DataLossError, match=files[0].name):
        list(stream.read_slice(slices[0]))
    lenient = make_format("tarantool-xlog", str(tmp_path / "wal"), {"failOnDataLoss": False}).stream()
    assert list(lenient.read_slice(slices[0])) == []


def test_other_instance_is_an_error(finished, tmp_path):
    files = copy_xlogs(finished, tmp_path / "wal")
    stream = make_format("tarantool-xlog", str(tmp_path / "wal"), {}).stream()
    start = dict(stream.initial_offset())
    start["instance"] = "00000000-0000-4000-8000-000000000001"
    with pytest.raises(SourceError, match="another instance"):
        stream.latest_offset(start, ReadBudget())
    assert files


def test_latest_offset_reads_only_the_new_part(tmp_path, monkeypatch):
    # wal_max_size below one transaction: every transaction gets its own xlog.
    writer = start_writer(tmp_path / "wal", total=250, period=0.001, wait=True, cfg={"wal_max_size": 512})
    writer.finish()
    files = writer.xlogs()
    assert len(files) > 80
    stream = make_format("tarantool-xlog", str(writer.directory), {}).stream()
    start = stream.initial_offset()
    near_end = stream.latest_offset(start, ReadBudget())
    opened: list[str] = []
    real_open = tail_module.open_input
    monkeypatch.setattr(tail_module, "open_input", lambda uri: opened.append(uri) or real_open(uri))
    fresh = make_format("tarantool-xlog", str(writer.directory), {}).stream()
    assert fresh.latest_offset(near_end, ReadBudget()) == near_end
    assert len(opened) <= 2  # the file it stands in (and its meta), never the ones passed
    opened.clear()
    step = fresh.latest_offset(start, ReadBudget(max_files=3))
    assert len(opened) <= 6
    assert step["file"] in {p.name for p in files[:4]}


def test_bad_options(finished):
    with pytest.raises(OptionError, match="startingPosition"):
        make_format("tarantool-xlog", str(finished), {"startingPosition": "yesterday"})
    with pytest.raises(OptionError, match="kind"):
        make_format("tarantool-xlog", str(finished), {"startingPosition": json.dumps({"v": 1, "kind": "mariadb"})})
    with pytest.raises(OptionError, match="maxRowsPerTrigger"):
        make_format("tarantool-xlog", str(finished), {"maxRowsPerTrigger": "0"})
    with pytest.raises(OptionError, match="one WAL directory"):
        make_format("tarantool-xlog", [str(finished), str(finished)], {}).stream()
    a_file = sorted(finished.glob("*.xlog"))[0]
    with pytest.raises(OptionError, match="not a directory"):
        make_format("tarantool-xlog", str(a_file), {}).stream().initial_offset()


def test_latest_starting_position_skips_what_is_there(finished):
    stream = make_format("tarantool-xlog", str(finished), {"startingPosition": "latest"}).stream()
    start = stream.initial_offset()
    assert start["file"] == sorted(p.name for p in finished.glob("*.xlog"))[-1]
    assert stream.latest_offset(start, ReadBudget()) == start
    explicit = make_format("tarantool-xlog", str(finished), {"startingPosition": offset_json(start)}).stream()
    assert explicit.initial_offset() == start
