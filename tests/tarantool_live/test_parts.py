"""A batch read's range cut into parts read over several connections at once (``tarantool/stream/parts.py``):
the same rows in the same order as the server's own files, cuts inside transactions, and the in-order reader's
bound, errors and early close."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.registry import format_class
from spark_logsource.tarantool.stream import parts
from spark_logsource.tarantool.stream.live import LiveSlice, LiveStream
from spark_logsource.tarantool.stream.parts import read_in_order, split_slice
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.tarantool_live import MIXED_WORKLOAD, directory_rows, strip


# --- split_slice ------------------------------------------------------------------------------------------------
def _slice(start: dict[int, int], end: dict[int, int], snapshot: bool = False) -> LiveSlice:
    return LiveSlice("rs", tuple(sorted(start.items())), tuple(sorted(end.items())), snapshot)


def test_split_cuts_one_origin_into_consecutive_parts() -> None:
    got = split_slice(_slice({1: 10, 2: 5}, {1: 110, 2: 5}), 4, min_lsns=20)
    assert [(s.start_vclock, s.end_vclock) for s in got] == [
        ({1: 10, 2: 5}, {1: 35, 2: 5}), ({1: 35, 2: 5}, {1: 60, 2: 5}),
        ({1: 60, 2: 5}, {1: 85, 2: 5}), ({1: 85, 2: 5}, {1: 110, 2: 5})]
    # no more parts than min_lsns allows; from an empty start the first part keeps the empty component out
    assert [(s.start_vclock, s.end_vclock) for s in split_slice(_slice({}, {1: 50}), 8, min_lsns=20)] == [
        ({}, {1: 25}), ({1: 25}, {1: 50})]


@pytest.mark.parametrize("slice_", [
    _slice({1: 0}, {1: 100}, snapshot=True),  # what follows a snapshot is known only once it is read
    _slice({1: 10, 2: 10}, {1: 100, 2: 100}),  # two advancing origins: a cut might leave the server's path
    _slice({1: 10}, {1: 29}),  # too few LSNs for two parts
])
def test_split_leaves_alone_what_it_must_not_cut(slice_: LiveSlice) -> None:
    assert split_slice(slice_, 4, min_lsns=10) == [slice_]


# --- read_in_order ----------------------------------------------------------------------------------------------
def _batch(part: int, i: int, rows: int = 1000) -> pa.RecordBatch:
    return pa.record_batch({"part": pa.array([part] * rows, pa.int64()), "i": pa.array([i] * rows, pa.int64())})


def test_batches_come_in_part_order_whatever_the_parts_speed() -> None:
    def reader(part: int, pause: float) -> Iterator[pa.RecordBatch]:
        for i in range(5):
            time.sleep(pause)
            yield _batch(part, i)

    # the last part is the fastest: it is done long before the first
    readers = [lambda p=p: reader(p, 0.02 * (3 - p)) for p in range(4)]
    got = [(b.column("part")[0].as_py(), b.column("i")[0].as_py()) for b in read_in_order(readers)]
    assert got == [(p, i) for p in range(4) for i in range(5)]


def test_parts_ahead_hold_no_more_than_the_bound() -> None:
    size = _batch(0, 0).nbytes
    produced = [0, 0, 0]

    def reader(part: int) -> Iterator[pa.RecordBatch]:
        for i in range(50):
            produced[part] += 1
            yield _batch(part, i)

    it = read_in_order([lambda p=p: reader(p) for p in range(3)], ahead_bytes=4 * size)
    first = next(it)
    time.sleep(0.3)  # give the readers time to run ahead as far as they may
    ahead = produced[1] + produced[2]
    # parts 1 and 2 may hold 4 batches between them, each one more that waits for room in its hand
    assert ahead <= 4 + 2, produced
    rest = list(it)
    assert [b.column("part")[0].as_py() for b in [first, *rest]] == [0] * 50 + [1] * 50 + [2] * 50


def test_a_reader_error_reaches_the_consumer_and_stops_the_others() -> None:
    stopped = threading.Event()

    def good() -> Iterator[pa.RecordBatch]:
        try:
            for i in range(10_000):
                time.sleep(0.001)
                yield _batch(0, i, rows=1)
        finally:
            stopped.set()

    def bad() -> Iterator[pa.RecordBatch]:
        yield _batch(1, 0)
        raise ValueError("part 1 broke")

    with pytest.raises(ValueError, match="part 1 broke"):
        for _ in read_in_order([good, bad]):
            pass
    assert stopped.wait(5)  # the first part's iterator was closed, not left running


def test_a_reader_failing_at_its_start_is_an_error_not_a_hang() -> None:
    def good() -> Iterator[pa.RecordBatch]:
        yield _batch(0, 0)

    def broken() -> Iterator[pa.RecordBatch]:  # a plain function that raises when called, before any iterator
        raise ConnectionError("no route to the server")

    outcome: list[BaseException] = []

    def consume() -> None:
        try:
            for _ in read_in_order([good, broken], name="t"):
                pass
        except BaseException as exc:
            outcome.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    consumer.join(60)  # the state waited for: the consumer has ended (it hung forever before the fix)
    assert not consumer.is_alive()
    assert isinstance(outcome[0], ConnectionError) and "t: part 2 of 2" in outcome[0].__notes__


def test_closing_early_closes_every_reader() -> None:
    closed: list[int] = []

    def reader(part: int) -> Iterator[pa.RecordBatch]:
        try:
            for i in range(1000):
                yield _batch(part, i)
        finally:
            closed.append(part)

    it = read_in_order([lambda p=p: reader(p) for p in range(3)], ahead_bytes=1)
    assert next(it).column("part")[0].as_py() == 0
    it.close()
    assert sorted(closed) == [0, 1, 2]


# --- against a real server --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_range(live_server: LiveTarantool) -> tuple[dict[int, int], dict[int, int]]:
    """(start, end) vclocks around one run of MIXED_WORKLOAD."""
    start = live_server.vclock()
    live_server.eval(MIXED_WORKLOAD)
    return start, live_server.vclock()


@pytest.mark.server
@pytest.mark.parametrize("tuple_format", ["json", "msgpack"])
def test_parts_give_the_files_rows_in_order(live_server: LiveTarantool, mixed_range, monkeypatch: pytest.MonkeyPatch,
                                            tuple_format: str) -> None:
    start, end = mixed_range
    # parts of 7 LSNs: cuts fall inside the workload's 31-row and 3-row transactions
    monkeypatch.setattr(parts, "MIN_PART_LSNS", 7)
    options: dict[str, Any] = live_server.options(
        tupleFormat=tuple_format, mode="FAILFAST", connections=8,
        startingPosition=json.dumps({"1": start[1]}), endingPosition=json.dumps({"1": end[1]}))
    fmt = format_class("tarantool-replication")(options)
    splits = fmt.plan(fmt.list_files())
    assert len(splits) == 8
    ends = [s.hint("slice").end_vclock[1] for s in splits]
    expected = directory_rows(live_server.directory, start, end, tuple_format)
    commit_of = {r["lsn"]: r["is_commit"] for r in expected}
    assert any(commit_of.get(e) is False for e in ends[:-1])  # some cut falls inside a transaction
    table = spark_logsource.read("tarantool-replication", [], **options)
    rows = table.to_pylist()
    assert len(rows) == len(expected) > 90
    assert strip(rows) == strip(expected)
    # each split alone: whole transactions (a part inside one transaction gets none of its rows), and together
    # the rows once each
    by_part = [[r for b in fmt.read_split(s) for r in b.to_pylist()] for s in splits]
    assert all(p[-1]["is_commit"] for p in by_part if p)
    assert [r["lsn"] for p in by_part for r in p] == [r["lsn"] for r in expected]


@pytest.mark.server
def test_by_default_a_range_is_read_in_two_parts(live_server: LiveTarantool, mixed_range,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    start, end = mixed_range
    monkeypatch.setattr(parts, "MIN_PART_LSNS", 7)
    opened: list[LiveSlice] = []
    real = LiveStream.read_slice

    def counting(self: LiveStream, slice_: Any) -> Iterator[pa.RecordBatch]:
        opened.append(slice_)
        return real(self, slice_)

    monkeypatch.setattr(LiveStream, "read_slice", counting)
    options: dict[str, Any] = live_server.options(
        tupleFormat="json", mode="FAILFAST", startingPosition=json.dumps({"1": start[1]}),
        endingPosition=json.dumps({"1": end[1]}))
    fmt = format_class("tarantool-replication")(options)
    assert len(fmt.plan(fmt.list_files())) == 2  # Spark: a task each
    rows = spark_logsource.read("tarantool-replication", [], **options).to_pylist()
    assert len(opened) == 2 and opened[0].start_vclock == {1: start[1]} and opened[-1].end_vclock == {1: end[1]}
    assert strip(rows) == strip(directory_rows(live_server.directory, start, end, "json"))


@pytest.mark.spark
@pytest.mark.server
def test_spark_reads_a_range_as_one_task_a_part(spark: Any, live_server: LiveTarantool) -> None:
    start = live_server.vclock()
    rows = 2 * parts.MIN_PART_LSNS + 100
    live_server.eval(f"for first = 1, {rows}, 500 do box.begin() for i = first, math.min(first + 499, {rows}) do "
                     "box.space.t:replace{i, 'p'} end box.commit() end", timeout=120)
    end = live_server.vclock()
    options = {k: str(v) for k, v in live_server.options(
        tupleFormat="json", connections=2, startingPosition=json.dumps({"1": start[1]}),
        endingPosition=json.dumps({"1": end[1]})).items()}
    df = spark.read.format("tarantool-replication").options(**options).load()
    assert df.rdd.getNumPartitions() == 2
    got = [r.lsn for r in df.select("lsn").collect()]
    expected = [r["lsn"] for r in directory_rows(live_server.directory, start, end, "json")]
    assert got == expected and len(got) == rows
