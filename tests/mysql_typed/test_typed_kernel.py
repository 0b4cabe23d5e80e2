"""view=table's compiled conversion (``mysql/table/kernel.py``, ``_typed.h``) against its Python reference.

Both paths read the same binlog MySQL wrote (the Sakila sample database, in the fixtures, so this also runs in the
AddressSanitizer pass), and the same binlog with bytes flipped inside rows events: the batches must be equal,
error rows included. Each side is chosen by the twin harness (``tests/support/twins.py``), the kernel path even
under ``SPARK_LOGSOURCE_PURE_PYTHON=1``. The real-server typed workloads are compared the same way
in ``test_table_view.py``.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.support.mysql_typed import count_kernel_events
from tests.support.twins import activate

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass

#: Sakila tables with most of its column types (decimal, year, enum, set, text, blob, timestamp, geometry).
FUZZED_TABLES = ("film", "address", "customer", "staff", "store", "language")


@pytest.fixture(scope="module")
def sakila(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The Sakila binlog uncompressed, and its changes view's rows."""
    path = tmp_path_factory.mktemp("sakila") / "mysql-bin.sakila"
    path.write_bytes(gzip.decompress((fixtures_dir / "mysql-binlog" / "osheroff" / "mysql-bin.sakila.gz").read_bytes()))
    return path, spark_logsource.read("mysql-binlog", str(path)).to_pylist()


def _batches(path: Path, table: str, kernel: bool, monkeypatch: pytest.MonkeyPatch,
             counts: list[tuple[str, bool]] | None = None, **options: str) -> list[Any]:
    """view=table's batches of ``sakila.<table>``, by the kernel path or the Python reference; ``counts`` as
    :func:`count_kernel_events` fills it."""
    with monkeypatch.context() as patch:
        activate("c" if kernel else "python", patch)
        if counts is not None:
            count_kernel_events(patch, counts)
        return list(spark_logsource.iter_batches("mysql-binlog", str(path), view="table", table=f"sakila.{table}",
                                                 **options))


def _assert_same(a: list[Any], b: list[Any], where: Any) -> None:
    assert [x.num_rows for x in a] == [y.num_rows for y in b], where
    for x, y in zip(a, b, strict=True):
        assert x.equals(y), (where, x.to_pylist()[:1], y.to_pylist()[:1])


def test_every_sakila_table_converts_in_the_kernel(sakila: tuple[Path, list[dict[str, Any]]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path, changes = sakila
    tables = sorted({r["table"] for r in changes})
    assert len(tables) == 16
    runs = 0
    for table in tables:
        counts: list[tuple[str, bool]] = []
        kernel = _batches(path, table, True, monkeypatch, counts)
        assert counts and all(ok for _how, ok in counts), (table, counts)  # no event declined
        _assert_same(kernel, _batches(path, table, False, monkeypatch), table)
        assert sum(len(b) for b in kernel) == sum(r["table"] == table for r in changes)
        runs += sum(how == "run" for how, _ok in counts)
    assert runs > 0  # runs of rows events go to the kernel in one call


def _rows_events(path: Path, changes: list[dict[str, Any]], table: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the row data of each rows event of ``table``: after the header and post-header, before the
    CRC32 trailer."""
    data = path.read_bytes()
    for pos in sorted({r["pos"] for r in changes if r["table"] == table}):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        yield pos + 19 + 8, pos + size - 4


@pytest.mark.parametrize("seed", range(24))
def test_flipped_row_bytes_agree(seed: int, sakila: tuple[Path, list[dict[str, Any]]],
                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes flipped inside rows events (the CRC not checked): the kernel declines what it cannot convert exactly,
    and the batches, error rows included, equal the reference's."""
    path, changes = sakila
    rng = random.Random(seed)
    table = FUZZED_TABLES[seed % len(FUZZED_TABLES)]
    events = list(_rows_events(path, changes, table))
    data = bytearray(path.read_bytes())
    for start, end in rng.sample(events, min(3, len(events))):
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
    bad = tmp_path / "mysql-bin.flipped"
    bad.write_bytes(bytes(data))
    options = {"verifyChecksums": "false", "mode": "PERMISSIVE"}
    _assert_same(_batches(bad, table, True, monkeypatch, **options),
                 _batches(bad, table, False, monkeypatch, **options), (seed, table))


@pytest.mark.parametrize("batch_size", ["100", "7"])
def test_a_transaction_past_the_buffer_is_cut_as_the_reference_cuts_it(
        batch_size: str, sakila: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction of more rows than the machine buffers streams its rows into the batches as it goes: a run of
    rows events stops where the batch is full, so the batches are cut where the per-event path cuts them."""
    from spark_logsource.mysql.read import transactions

    path, _changes = sakila
    monkeypatch.setattr(transactions, "MAX_PENDING_ROWS", 300)
    counts: list[tuple[str, bool]] = []
    kernel = _batches(path, "rental", True, monkeypatch, counts, batchSize=batch_size)
    assert ("run", True) in counts
    _assert_same(kernel, _batches(path, "rental", False, monkeypatch, batchSize=batch_size), batch_size)
