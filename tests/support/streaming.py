"""Helpers of the streaming tests: the rows that identify a streamed row, and the batch reader's oracle."""

from __future__ import annotations

from pathlib import Path

import spark_logsource

#: Columns that identify a row and its content (tuples as JSON text).
KEY_COLUMNS = ("file", "offset", "lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple", "ops")


def batch_reader_rows(files: list[Path]) -> list[tuple]:
    """The batch reader's rows of ``files`` (checked against Tarantool's xlog.pairs elsewhere), sorted."""
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in files], tupleFormat="json")
    return sorted(tuple(r.values()) for r in table.select(list(KEY_COLUMNS)).to_pylist())
