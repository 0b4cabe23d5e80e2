"""The columnar JVM reader's Python worker (``spark_logsource.arrow.pipe``), without Spark: its answers are the
format's own batches, cut to the asked columns, each followed by a status the JVM can check the stream against."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.arrow.pipe import encode_format, encode_split, serve

XLOG = "tarantool/test/xlog/reader/v13"
SAKILA = "mysql-binlog/osheroff/mysql-bin.sakila.gz"
DAMAGED = "tarantool/test/xlog/reader/crc.bad.xlog"  # Tarantool's own test file: a row whose CRC does not match


def request(fmt: str, path: str, columns: list[str] | None = None, transport: str = "stream",
            **options: str) -> tuple[bytes, pa.Schema]:
    """The task lines of every split of ``path`` (``tests/core/test_arrow_ring.py`` asks for the ring)."""
    log_format = make_format(fmt, path, options)
    names = log_format.schema().names if columns is None else columns
    splits = log_format.plan(log_format.list_files())
    head = encode_format(log_format)
    lines = [f"{head}\n{encode_split(split)}\n" + "\t".join(names) + f"\n{transport}\n" for split in splits]
    return "".join(lines).encode(), log_format.schema()


def answers(data: bytes) -> list[tuple[pa.Table, str]]:
    """The (stream, status line) pairs of a worker's stdout."""
    out, found = io.BytesIO(data), []
    while out.tell() < len(data):
        table = pa.ipc.open_stream(out).read_all()  # reads up to the end marker, not past it
        found.append((table, out.readline().decode().rstrip("\n")))
    return found


def test_each_split_is_answered_with_its_rows_and_an_ok_status(fixtures_dir: Path, tmp_path: Path) -> None:
    # uncompressed, so that the binlog has several splits (a .gz file is one)
    binlog = tmp_path / "mysql-bin.000001"
    binlog.write_bytes(gzip.decompress((fixtures_dir / SAKILA).read_bytes()))
    path = str(binlog)
    data, schema = request("mysql-binlog", path, view="table", table="sakila.payment", maxPartitionBytes="1000000")
    out = io.BytesIO()
    serve(io.BytesIO(data), out)
    got = answers(out.getvalue())
    assert len(got) > 1  # several splits, served one after another by one worker
    for table, status in got:
        assert table.schema == schema and status == f"ok {table.num_rows}"
    whole = pa.concat_tables([t for t, _ in got])
    assert whole.equals(spark_logsource.read("mysql-binlog", path, view="table", table="sakila.payment"))


def test_asked_columns_only_and_the_row_count_without_any(fixtures_dir: Path) -> None:
    path = str(fixtures_dir / XLOG)
    expected = spark_logsource.read("tarantool-xlog", path)
    for columns in (["lsn", "space_id"], []):
        data, _ = request("tarantool-xlog", path, columns)
        out = io.BytesIO()
        serve(io.BytesIO(data), out)
        got = answers(out.getvalue())
        assert len(got) == 2  # the directory's .snap and .xlog
        for table, status in got:
            assert table.schema.names == columns and status == f"ok {table.num_rows}"
        assert sum(t.num_rows for t, _ in got) == expected.num_rows
        if columns:
            assert pa.concat_tables([t for t, _ in got]).equals(expected.select(columns))


def test_a_damaged_file_ends_the_stream_and_the_status_names_file_and_offset(fixtures_dir: Path) -> None:
    damaged = fixtures_dir / DAMAGED
    with pytest.raises(spark_logsource.errors.CorruptDataError) as ours:
        spark_logsource.read("tarantool-xlog", str(damaged), mode="FAILFAST")
    good, _ = request("tarantool-xlog", str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog"))
    bad, _ = request("tarantool-xlog", str(damaged), mode="FAILFAST")
    out = io.BytesIO()
    serve(io.BytesIO(bad + good), out)  # one of our errors: the worker goes on with the next task
    [(_, first), (table, second)] = answers(out.getvalue())
    assert first == f"error {type(ours.value).__name__}: {ours.value}"
    assert str(damaged) in first
    assert second == f"ok {table.num_rows}" and table.num_rows > 0


def test_a_bug_ends_the_worker_after_its_status(fixtures_dir: Path) -> None:
    good, _ = request("tarantool-xlog", str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog"))
    out = io.BytesIO()
    serve(io.BytesIO(b"not a task\nnor a split\n\nstream\n" + good), out)
    [(table, status)] = answers(out.getvalue())  # the good task after it was not served
    assert status.startswith("error internal ") and table.num_rows == 0


def test_the_module_serves_over_its_pipes_until_stdin_closes(fixtures_dir: Path) -> None:
    data, _ = request("tarantool-xlog", str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog"))
    done = subprocess.run([sys.executable, "-m", "spark_logsource.arrow.pipe"], input=data + data,
                          capture_output=True, timeout=120, check=True)
    got = answers(done.stdout)
    assert len(got) == 2 and got[0][0].equals(got[1][0]) and got[0][1] == got[1][1]
