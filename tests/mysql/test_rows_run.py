"""Runs of rows events read by one kernel call (``spark_logsource/mysql/encode/runs.py``) against the per-event path.

The binlogs are written by the session's MariaDB: statements of thousands of rows, which the server cuts into many
rows events of one table (``binlog_row_event_max_size``), in a transaction of two statements, then updates (before
and after images) and deletes; with CRC32 checksums and without (then ``log_pos`` is what the kernel checks). The
per-event path is checked against ``mariadb-binlog -vv`` by ``test_reader.py`` and ``test_values_oracle.py``; here
the run path must give exactly its table, its errors and its corrupt-record rows.
"""

from __future__ import annotations

import itertools
import shutil
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.api import make_format
from spark_logsource.errors import CorruptDataError
from spark_logsource.filters import Predicate
from spark_logsource.framing import BadRange
from spark_logsource.mysql.binlog.events import BinlogFile
from spark_logsource.mysql.encode import runs as rows_run
from spark_logsource.mysql.encode.images import KERNEL_AVAILABLE, encode_rows_event_c
from spark_logsource.mysql.read import transactions
from tests.support.mysql_types import DEFAULTS
from tests.support.twins import compiled

WRITE_ROWS_V1 = 23


@dataclass
class RunBinlog:
    path: Path
    counts: Counter  # rows per op, as the server reported them
    write_rows: list[tuple[int, int]]  # (pos, next_pos) of every WRITE_ROWS event


def _values(first: int, count: int) -> str:
    return ", ".join(f"({n}, 'name {n}', {'NULL' if n % 5 == 0 else repr('note of row ' + str(n) * 3)}, "
                     f"{n * 1.5:.2f}, '2024-0{1 + n % 9}-1{n % 10} 12:{n % 60:02d}:00')"
                     for n in range(first, first + count))


@pytest.fixture(scope="module", params=["CRC32", "NONE"])
def run_binlog(request: pytest.FixtureRequest, mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> RunBinlog:
    counts: Counter = Counter()

    def workload(srv: Any) -> None:
        srv.execute("DROP DATABASE IF EXISTS g_run")
        srv.execute("CREATE DATABASE g_run")
        srv.execute("CREATE TABLE g_run.t (id INT PRIMARY KEY, name VARCHAR(64), note TEXT, amount DECIMAL(12,2),"
                    " created DATETIME)")
        srv.execute("BEGIN")
        counts["insert"] += srv.execute("INSERT INTO g_run.t VALUES " + _values(1, 3000))
        counts["insert"] += srv.execute("INSERT INTO g_run.t VALUES " + _values(3001, 2000))
        srv.execute("COMMIT")
        counts["update"] += srv.execute("UPDATE g_run.t SET note = CONCAT('changed ', id) WHERE id % 2 = 0")
        counts["delete"] += srv.execute("DELETE FROM g_run.t WHERE id > 4000")

    settings = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "binlog_checksum": request.param,
                "log_bin_compress": "OFF"}
    files = mariadb.run_workload(workload, settings, dest=tmp_path_factory.mktemp(f"rows-run-{request.param}"))
    for key, value in DEFAULTS.items():  # the server is the session's: later workloads expect its defaults
        mariadb.set_global(key, value)
    assert len(files) == 1, files
    with BinlogFile(None, str(files[0])) as bf:
        writes = [(e.pos, e.next_pos) for e in bf.events()
                  if not isinstance(e, BadRange) and e.type_code in (WRITE_ROWS_V1, 30)]
    assert len(writes) > 20, "the server wrote the inserts as few rows events: no runs to test"
    return RunBinlog(files[0], counts, writes)


@pytest.fixture
def kernel_runs(monkeypatch: pytest.MonkeyPatch) -> list[rows_run.RowsRun]:
    """The compiled path in use (whatever SPARK_LOGSOURCE_PURE_PYTHON says); the runs it reads are recorded."""
    if not KERNEL_AVAILABLE:
        pytest.fail("the MySQL C kernel does not import (build it: python3 setup.py build_ext --inplace)")
    monkeypatch.setattr(transactions, "rows_encoder", lambda: encode_rows_event_c)
    seen: list[rows_run.RowsRun] = []
    encode = transactions.encode_run

    def recording(*args: Any, **kwargs: Any) -> rows_run.RowsRun | None:
        run = encode(*args, **kwargs)
        if run is not None:
            seen.append(run)
        return run

    monkeypatch.setattr(transactions, "encode_run", recording)
    return seen


def read(path: Path, runs: bool, monkeypatch: pytest.MonkeyPatch, predicates: Sequence[Predicate] = (),
         **options: str) -> pa.Table:
    """Every split of ``path`` read in turn (as Spark's tasks do), with or without the run path."""
    with monkeypatch.context() as patch:
        if not runs:
            patch.setattr(transactions.TransactionMachine, "rows_run", lambda self, *args, **kwargs: None)
        fmt = make_format("mysql-binlog", str(path), options)
        batches = [b for split in fmt.plan(fmt.list_files(), predicates) for b in fmt.read_split(split, predicates)]
        return pa.Table.from_batches(batches, schema=fmt.schema())


@pytest.mark.parametrize("options", [
    {},
    {"rowFormat": "json"},
    {"maxPartitionBytes": "40000"},
    {"includeQuery": "true", "batchSize": "700"},
], ids=["defaults", "json", "splits", "query-small-batches"])
def test_runs_equal_the_per_event_path(run_binlog: RunBinlog, kernel_runs: list, monkeypatch: pytest.MonkeyPatch,
                                       options: dict[str, str]) -> None:
    with_runs = read(run_binlog.path, True, monkeypatch, **options)
    assert max(len(run.events) for run in kernel_runs) > 5, "no run of several events was read"
    without = read(run_binlog.path, False, monkeypatch, **options)
    assert with_runs.equals(without)
    assert Counter(with_runs.column("op").to_pylist()) == run_binlog.counts


def _steps_over(run: rows_run.RowsRun) -> bool:
    """Whether the run stepped over events between two of its rows events (a statement's TABLE_MAP and text)."""
    return bool((run.events[1:, 0] != run.events[:-1, 1]).any())


@pytest.mark.parametrize(("options", "across"), [
    ({}, True),
    ({"rowFormat": "json"}, True),
    ({"includeQuery": "true"}, False),  # each row carries its statement: a run ends where the next one's text is
], ids=["defaults", "json", "query"])
def test_a_run_goes_on_across_the_next_statement(run_binlog: RunBinlog, kernel_runs: list,
                                                 monkeypatch: pytest.MonkeyPatch, options: dict[str, str],
                                                 across: bool) -> None:
    """The transaction's second INSERT logs the table's TABLE_MAP again (and its text): one run reads both statements
    when the rows do not carry the text, and the rows are the per-event path's."""
    with_runs = read(run_binlog.path, True, monkeypatch, **options)
    inserts = [run for run in kernel_runs if run.op == "insert"]
    assert any(map(_steps_over, inserts)) == across
    if across:
        assert max(int(run.events[:, 4].sum()) for run in inserts) > 3000  # more rows than the first statement has
    assert with_runs.equals(read(run_binlog.path, False, monkeypatch, **options))
    assert Counter(with_runs.column("op").to_pylist()) == run_binlog.counts


@pytest.mark.parametrize(("options", "predicates", "runs_expected"), [
    ({"tables": "g_run.t"}, [], True),
    ({"ops": "update,delete"}, [], True),
    ({}, [Predicate("table", "=", "t"), Predicate("op", "in", ("insert", "delete"))], True),
    ({}, [Predicate("table", "=", "other")], False),
    ({"startDatetime": "2000-01-01 00:00:00"}, [], False),  # a filter on the event header: per event
], ids=["tables", "ops", "pushed-table-op", "pushed-other-table", "start-datetime"])
def test_filters_with_runs_equal_the_per_event_path(run_binlog: RunBinlog, kernel_runs: list,
                                                    monkeypatch: pytest.MonkeyPatch, options: dict[str, str],
                                                    predicates: list[Predicate], runs_expected: bool) -> None:
    with_runs = read(run_binlog.path, True, monkeypatch, predicates, **options)
    assert bool(kernel_runs) == runs_expected
    assert with_runs.equals(read(run_binlog.path, False, monkeypatch, predicates, **options))


def test_a_stop_position_inside_a_run(run_binlog: RunBinlog, kernel_runs: list,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    stop = run_binlog.write_rows[len(run_binlog.write_rows) // 2][0]
    with_runs = read(run_binlog.path, True, monkeypatch, stopPosition=str(stop))
    assert kernel_runs
    assert with_runs.equals(read(run_binlog.path, False, monkeypatch, stopPosition=str(stop)))
    assert max(with_runs.column("pos").to_pylist()) < stop


def test_a_stop_position_past_any_file(run_binlog: RunBinlog, kernel_runs: list,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond what a C offset holds (2**64): the same as no stop position."""
    with_runs = read(run_binlog.path, True, monkeypatch, stopPosition=str(2**64))
    assert kernel_runs
    assert with_runs.equals(read(run_binlog.path, False, monkeypatch))


def test_the_pending_rows_limit_inside_a_run(run_binlog: RunBinlog, kernel_runs: list,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction over MAX_PENDING_ROWS looks ahead for its XID in the middle of a run."""
    monkeypatch.setattr(transactions, "MAX_PENDING_ROWS", 1100)
    with_runs = read(run_binlog.path, True, monkeypatch)
    assert kernel_runs
    without = read(run_binlog.path, False, monkeypatch)
    assert with_runs.equals(without)
    assert with_runs.column("xid").null_count == 0


def _damaged(run_binlog: RunBinlog, tmp_path: Path) -> tuple[Path, int]:
    """A copy with one letter of a text value changed in a rows event in the middle of the first statement's run:
    the rows still decode, so only the CRC (where the file has one) tells the event is damaged."""
    pos, next_pos = run_binlog.write_rows[5]
    data = bytearray(run_binlog.path.read_bytes())
    at = data.index(b"note of row", pos, next_pos)
    data[at] ^= 0x01  # 'n' -> 'o'
    path = tmp_path / run_binlog.path.name
    path.write_bytes(bytes(data))
    return path, pos


@pytest.fixture(params=["folded", "zlib"])
def crc_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The walks check CRCs folded in C where the processor can, else through zlib.crc32: each in turn."""
    from spark_logsource.mysql.binlog import checksum

    _kernel = compiled("spark_logsource.mysql._kernel")
    folds = _kernel.crc32_folds()
    if request.param == "folded" and not folds:
        pytest.skip("this processor has no PCLMULQDQ: runs check CRCs through zlib.crc32 only")
    _kernel.set_crc32_folding(request.param == "folded")
    monkeypatch.setattr(checksum, "crc32", _kernel.crc32 if request.param == "folded" else zlib.crc32)
    yield request.param
    _kernel.set_crc32_folding(folds)


def test_a_damaged_event_inside_a_run_gives_the_per_event_rows(run_binlog: RunBinlog, kernel_runs: list,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path, crc_path: str) -> None:
    path, pos = _damaged(run_binlog, tmp_path)
    with_runs = read(path, True, monkeypatch, mode="PERMISSIVE")
    assert kernel_runs
    assert with_runs.equals(read(path, False, monkeypatch, mode="PERMISSIVE"))
    corrupt = with_runs.filter(pa.compute.is_valid(with_runs.column("_corrupt_record"))).column("pos").to_pylist()
    if run_binlog.path.parent.name.startswith("rows-run-CRC32"):
        assert corrupt == [pos]  # the CRC mismatch: one corrupt-record row at the event's offset
    else:
        assert corrupt == []  # nothing tells the change: the changed text is read, by both paths
        assert "ote of row" in str(with_runs.column("after").to_pylist())


def test_a_damaged_event_inside_a_run_raises_the_per_event_error(run_binlog: RunBinlog, kernel_runs: list,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    path, _pos = _damaged(run_binlog, tmp_path)
    errors = []
    for runs in (True, False):
        try:
            read(path, runs, monkeypatch, mode="FAILFAST")
            errors.append(None)
        except CorruptDataError as exc:
            errors.append((type(exc), str(exc)))
    assert errors[0] == errors[1]
    if run_binlog.path.parent.name.startswith("rows-run-CRC32"):
        assert errors[0] is not None


def test_a_copy_under_another_name_reads_the_same(run_binlog: RunBinlog, kernel_runs: list,
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The ``file`` column is the path as given: runs repeat it like single events do."""
    copy = tmp_path / "renamed-binlog.000001"
    shutil.copyfile(run_binlog.path, copy)
    table = read(copy, True, monkeypatch)
    assert set(table.column("file").to_pylist()) == {str(copy)}
    assert table.drop_columns(["file"]).equals(read(run_binlog.path, False, monkeypatch).drop_columns(["file"]))


def _read_ranges(path: Path, runs: bool, monkeypatch: pytest.MonkeyPatch, cuts: Sequence[int]) -> pa.Table:
    """The file read as the directory tail reads it: ranges between transaction boundaries (``walk_range``)."""
    from spark_logsource.mysql.binlog.splits import walk_range
    from spark_logsource.mysql.read.options import BinlogReadOptions
    from spark_logsource.mysql.read.views import ViewWriter

    options = BinlogReadOptions()
    bounds: list[int | None] = [4, *cuts, None]
    batches = []
    with monkeypatch.context() as patch:
        if not runs:
            patch.setattr(transactions.TransactionMachine, "rows_run", lambda self, *args, **kwargs: None)
        for start, stop in itertools.pairwise(bounds):
            with BinlogFile(None, str(path)) as bf:
                machine = transactions.TransactionMachine(bf.fde, options, ViewWriter(str(path), options, ()),
                                                          look_ahead=lambda pos, bf=bf: bf.events(pos))
                batches += list(walk_range(bf, start, stop, machine))
    return pa.Table.from_batches(batches)


def test_the_directory_tails_ranges_read_runs_too(run_binlog: RunBinlog, kernel_runs: list,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with BinlogFile(None, str(run_binlog.path)) as bf:
        starts = [e.pos for e in bf.events()
                  if not isinstance(e, BadRange) and e.type_code in transactions.GROUP_TYPES]
    assert len(starts) >= 3
    whole = _read_ranges(run_binlog.path, True, monkeypatch, [])
    assert max(len(run.events) for run in kernel_runs) > 5
    assert whole.equals(_read_ranges(run_binlog.path, False, monkeypatch, []))
    pieces = _read_ranges(run_binlog.path, True, monkeypatch, starts[1:])
    assert pieces.equals(whole)
    assert Counter(whole.column("op").to_pylist()) == run_binlog.counts
