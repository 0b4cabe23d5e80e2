"""YugabyteDB's batches are cut like every format's: at most ``batchSize`` rows and at most the byte cap of
variable-width data (Arrow's string and binary arrays hold less than 2 GiB each).

The cap is lowered for the test so that kilobytes exercise the rule meant for hundreds of megabytes. Rows are
checked against the segments' ``.expected.jsonl`` (what YugabyteDB's semantics say each segment holds) and against
the same read uncut: none is lost, repeated or reordered.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import spark_logsource
from spark_logsource.arrow.columns import variant_field
from spark_logsource.yugabyte import reader
from tests.yugabyte.conftest import Expected

CAP = 2048


def _variable_bytes(batch: pa.RecordBatch) -> int:
    """The bytes of the batch's string and binary values (a Variant's value and metadata both count)."""
    total = 0
    for field in batch.schema:
        column = batch.column(field.name)
        if field.type == variant_field(field.name).type:
            parts = [column.field("value"), column.field("metadata")]
        elif pa.types.is_string(field.type) or pa.types.is_binary(field.type):
            parts = [column]
        else:
            continue
        for part in parts:
            total += pc.sum(pc.binary_length(part)).as_py() or 0
    return total


def _batches(wal_dir: Any, view: str, **options: Any) -> list[pa.RecordBatch]:
    return list(spark_logsource.iter_batches("yugabyte-wal", str(wal_dir), view=view, includeSuperseded=True,
                                             mode="DROPMALFORMED", **options))


@pytest.mark.parametrize("value_format", ["variant", "json"])
@pytest.mark.parametrize("view", ["operations", "writes"])
def test_small_byte_cap_cuts_batches_and_keeps_every_row(wal_dir: Any, expected_segments: list[Expected],
                                                         view: str, value_format: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _batches(wal_dir, view, valueFormat=value_format)
    whole_bytes = sum(_variable_bytes(b) for b in whole)
    assert whole_bytes > 4 * CAP  # else the cap would not cut
    monkeypatch.setattr(reader, "MAX_BATCH_BYTES", CAP)
    capped = _batches(wal_dir, view, valueFormat=value_format)
    assert len(capped) >= whole_bytes // CAP
    for batch in capped:
        assert _variable_bytes(batch) <= CAP or len(batch) == 1
    rows = [r for b in capped for r in b.to_pylist()]
    assert rows == [r for b in whole for r in b.to_pylist()]
    if view == "operations":
        got = sorted((r["tablet_id"], r["segment_seqno"], r["offset"], r["entry_in_batch"]) for r in rows)
        want = sorted((e.segment["tablet_id"], e.segment["header"]["sequence_number"], w["batch_offset"],
                       w["entry_in_batch"]) for e in expected_segments for w in e.entries)
    else:
        got = sorted((r["tablet_id"], r["term"], r["index"], r["pair_index"]) for r in rows)
        want = sorted((e.segment["tablet_id"], w["op_id"]["term"], w["op_id"]["index"], w["pair_index"])
                      for e in expected_segments for w in e.rows)
    # every expected row once; the damaged segment's rows after its bad batch are read on, beyond the expectations
    assert len(got) == len(set(got))
    assert set(want) <= set(got)


def test_batch_size_caps_rows_of_a_write_with_many_pairs(wal_dir: Any, expected_segments: list[Expected]) -> None:
    pairs_per_write: dict[tuple[str, int, int], int] = {}
    for e in expected_segments:
        for w in e.rows:
            key = (e.segment["tablet_id"], w["op_id"]["term"], w["op_id"]["index"])
            pairs_per_write[key] = pairs_per_write.get(key, 0) + 1
    size = max(pairs_per_write.values()) - 1
    assert size >= 1  # a write of more pairs than a batch holds
    whole = _batches(wal_dir, "writes")
    capped = _batches(wal_dir, "writes", batchSize=size)
    assert all(0 < len(b) <= size for b in capped)
    assert [r for b in capped for r in b.to_pylist()] == [r for b in whole for r in b.to_pylist()]
