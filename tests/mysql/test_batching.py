"""Output batches of the binlog reader: byte limits (statements repeated per row), gzip files split by name-less
magic, and the same rows whatever the batching."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.mysql.read import batches as batch_builder

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "mysql" / "full-image.000001"


def _rows(table: pa.Table) -> list[tuple]:
    cols = ["pos", "row_index", "op", "table", "query", "before", "after", "xid", "gtid"]
    return list(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


@pytest.mark.parametrize("limit", [1, 2_000, 50_000])
def test_byte_limited_batches_hold_the_same_rows(monkeypatch, limit) -> None:
    whole = spark_logsource.read("mysql-binlog", str(SAMPLE), includeQuery="true")
    assert whole.column("query").null_count < whole.num_rows, "the sample logs statements with its rows"
    monkeypatch.setattr(batch_builder, "MAX_BATCH_BYTES", limit)
    batches = list(spark_logsource.iter_batches("mysql-binlog", str(SAMPLE), includeQuery="true"))
    assert _rows(pa.Table.from_batches(batches, schema=whole.schema)) == _rows(whole)
    for batch in batches:
        text = sum(len(v.encode()) for v in batch.column("query").to_pylist() if v)
        assert len(batch) == 1 or text <= limit, "a batch over the byte limit has a single row"


def test_gzipped_binlog_without_gz_name_is_read_whole_by_one_split(tmp_path) -> None:
    packed = tmp_path / "mysql-bin.000001"
    packed.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    want = _rows(spark_logsource.read("mysql-binlog", str(SAMPLE)))
    assert _rows(spark_logsource.read("mysql-binlog", str(packed))) == want
    assert _rows(spark_logsource.read("mysql-binlog", str(packed), maxPartitionBytes="1k")) == want
    assert _rows(spark_logsource.read("mysql-binlog", str(tmp_path), maxPartitionBytes="1k")) == want
