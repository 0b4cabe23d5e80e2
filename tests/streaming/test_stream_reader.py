"""The generic Spark stream reader, driven the way each pyspark version's runner drives it (no JVM needed).

4.0/4.1 call ``latestOffset()`` with no argument and never pass a ``ReadLimit``; 4.2+ call
``latestOffset(start, limit)``, ``getDefaultReadLimit()`` and, for ``trigger(availableNow=True)``,
``prepareForTriggerAvailableNow()``. The stream is the Tarantool WAL directory source over real files.
"""

from __future__ import annotations

import inspect
import pickle
import shutil

import pytest

from spark_logsource.api import make_format
from spark_logsource.errors import SchemaChangeError
from spark_logsource.spark.stream_reader import (
    LogStreamReader,
    StreamSlicePartition,
    budget_from_limit,
    make_stream_reader,
)
from spark_logsource.streaming.stream import ReadBudget, offset_json

try:  # the ReadLimit classes and the availableNow mixin (pyspark 4.2+)
    from pyspark.sql.streaming import datasource as sds
except ImportError:  # pyspark 4.0/4.1: only the no-argument latestOffset() protocol exists
    sds = None
needs_read_limits = pytest.mark.skipif(sds is None, reason="pyspark < 4.2 has no ReadLimit")

COLUMNS = ["file", "offset", "lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple", "ops"]


def reader_for(path, **options) -> LogStreamReader:
    return make_stream_reader(make_format("tarantool-xlog", str(path), {"tupleFormat": "json", **options}).stream())


def run_partitions(reader: LogStreamReader, start, end) -> list[tuple]:
    rows = []
    for part in reader.partitions(start, end):
        # Executors get a pickled copy: go through pickle as Spark does.
        copy = pickle.loads(pickle.dumps(reader))
        part = pickle.loads(pickle.dumps(part))
        for batch in copy.read(part):
            rows += [tuple(r.values()) for r in batch.select(COLUMNS).to_pylist()]
    return rows


@needs_read_limits
def test_signature_and_mixin_match_what_spark_probes(finished_wal):
    reader = reader_for(finished_wal)
    assert len(inspect.signature(reader.latestOffset).parameters) == 2  # 4.2+: admission control
    assert isinstance(reader, sds.SupportsTriggerAvailableNow)


@needs_read_limits
def test_read_limits_map_to_budgets():
    default = ReadBudget(max_rows=100, max_bytes=1 << 20)
    assert budget_from_limit(None, default) == default  # 4.0/4.1: the options
    assert budget_from_limit(sds.ReadAllAvailable(), default) == ReadBudget()  # Trigger.Once / availableNow
    assert budget_from_limit(sds.ReadMaxBytes(1 << 20), default) == default  # our default comes back: all options
    assert budget_from_limit(sds.ReadMaxRows(7), default) == ReadBudget(max_rows=7)
    assert budget_from_limit(sds.ReadMaxFiles(2), ReadBudget()) == ReadBudget(max_files=2)
    assert budget_from_limit(sds.ReadMinRows(5), default) == ReadBudget()


@needs_read_limits
def test_default_read_limit_from_options(finished_wal):
    assert isinstance(reader_for(finished_wal).getDefaultReadLimit(), sds.ReadAllAvailable)
    assert reader_for(finished_wal, maxRowsPerTrigger=5).getDefaultReadLimit() == sds.ReadMaxRows(5)
    limit = reader_for(finished_wal, maxRowsPerTrigger=5, maxFilesPerTrigger=2).getDefaultReadLimit()
    assert limit == sds.ReadMaxFiles(2)


def test_reader_class_matches_the_installed_spark(finished_wal):
    reader = reader_for(finished_wal)
    if sds is None:
        assert type(reader) is LogStreamReader  # no mixin to offer; Spark's own availableNow wrapper applies
    else:
        assert isinstance(reader, sds.SupportsTriggerAvailableNow)


def test_old_spark_protocol_without_start_reads_everything_once(finished_wal, tmp_path, expected_rows):
    """4.0/4.1: latestOffset() has no start and comes first, even before initialOffset() in a new query; the
    options cap every batch after the first of the run."""
    wal = tmp_path / "wal"
    wal.mkdir()
    xlogs = sorted(finished_wal.glob("*.xlog"))
    for p in xlogs[:2]:
        shutil.copy(p, wal / p.name)
    reader = reader_for(wal, maxRowsPerTrigger=40)
    end = reader.latestOffset()  # the order pyspark 4.0.1 uses (seen on a real query)
    start = reader.initialOffset()
    rows = run_partitions(reader, start, end)
    assert sorted(rows) == expected_rows([wal / p.name for p in xlogs[:2]])  # the first batch is not capped
    reader.commit(end)
    for p in xlogs[2:]:
        shutil.copy(p, wal / p.name)
    start, batches = end, 0
    while True:
        end = reader.latestOffset()
        if offset_json(end) == offset_json(start):
            break
        assert reader.stream.compare_offsets(end, start) > 0
        got = run_partitions(reader, start, end)
        assert len(got) <= 40 or len({(r[0], r[1]) for r in got}) == 1  # capped (to whole blocks)
        rows += got
        reader.commit(end)
        start = end
        batches += 1
    assert sorted(rows) == expected_rows(sorted(wal.glob("*.xlog")))  # every row once
    assert batches > 3
    # A restarted 4.0/4.1 query asks latestOffset() before anything else: the newest boundary, uncapped.
    restarted = reader_for(wal, maxRowsPerTrigger=40)
    assert restarted.latestOffset() == end


@needs_read_limits
def test_new_spark_protocol_with_limits(finished_wal, expected_rows):
    reader = reader_for(finished_wal, maxRowsPerTrigger=40)
    start = reader.initialOffset()
    limit = reader.getDefaultReadLimit()
    first = reader.latestOffset(start, limit)
    everything = reader.latestOffset(start, sds.ReadAllAvailable())
    assert reader.stream.compare_offsets(first, everything) < 0
    assert sorted(run_partitions(reader, start, everything)) == expected_rows(sorted(finished_wal.glob("*.xlog")))
    assert reader.partitions(everything, everything) == []


@needs_read_limits
def test_available_now_never_passes_its_target(finished_wal, tmp_path, expected_rows):
    wal = tmp_path / "wal"
    wal.mkdir()
    xlogs = sorted(finished_wal.glob("*.xlog"))
    for p in xlogs[:-1]:
        shutil.copy(p, wal / p.name)
    reader = reader_for(wal, maxRowsPerTrigger=30)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    rows, seen = [], []
    while True:
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        if not seen:
            shutil.copy(xlogs[-1], wal / xlogs[-1].name)  # data arriving after the run started
        if offset_json(end) == offset_json(start):
            break
        seen.append(end)
        rows += run_partitions(reader, start, end)
        start = end
    assert len(seen) > 3
    assert sorted(rows) == expected_rows([wal / p.name for p in xlogs[:-1]])  # the newer file: next run
    assert all(o["file"] != xlogs[-1].name for o in seen)


@needs_read_limits
def test_pickled_reader_carries_no_driver_state(finished_wal):
    reader = reader_for(finished_wal)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    reader.latestOffset(start, sds.ReadAllAvailable())
    copy = pickle.loads(pickle.dumps(reader))
    assert copy._last is None and copy._target is None and not copy._available_now
    assert copy.stream._metas == {}
    part = reader.partitions(start, reader._last)[0]
    assert isinstance(part, StreamSlicePartition) and "XlogSlice(" in repr(part)


@needs_read_limits
def test_available_now_ends_with_the_stop_its_stream_reports_at_the_target(finished_wal):
    """A stream that must stop at a boundary (a schema change its query's schema cannot name) raises from
    ``latest_offset`` when asked from there: an availableNow run whose target is that boundary ends with the error
    after its last batch, rather than ending cleanly and failing only in the next run."""
    stream = make_format("tarantool-xlog", str(finished_wal), {"tupleFormat": "json", "maxRowsPerTrigger": "30"}
                         ).stream()
    target = stream.latest_offset(stream.initial_offset(), ReadBudget())

    class StopsAtTheEnd(type(stream)):  # type: ignore[misc]
        def latest_offset(self, start, budget):
            if offset_json(start) == offset_json(target):
                raise SchemaChangeError(str(finished_wal), "end", "ALTER", "a layout the schema cannot name")
            return super().latest_offset(start, budget)

    stream.__class__ = StopsAtTheEnd
    reader = make_stream_reader(stream)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    seen = []
    with pytest.raises(SchemaChangeError, match="schema change"):
        for _ in range(1000):
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
            if offset_json(end) == offset_json(start):
                break
            seen.append(end)
            start = end
    assert len(seen) > 1 and offset_json(seen[-1]) == offset_json(target), "every batch up to the stop was read"
