"""Helpers of the streaming tests: the rows that identify a streamed row, the batch reader's oracle, an
``availableNow`` query run to its end, and ``foreachBatch`` sinks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import spark_logsource

#: Columns that identify a row and its content (tuples as JSON text).
KEY_COLUMNS = ("file", "offset", "lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple", "ops")


def batch_reader_rows(files: list[Path]) -> list[tuple]:
    """The batch reader's rows of ``files`` (checked against Tarantool's xlog.pairs elsewhere), sorted."""
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in files], tupleFormat="json")
    return sorted(tuple(r.values()) for r in table.select(list(KEY_COLUMNS)).to_pylist())


def run_available_now(df: Any, checkpoint: Path, sink: Any, timeout: float) -> None:
    """Run the streaming DataFrame ``df`` into the foreachBatch ``sink`` with ``trigger(availableNow=True)`` on
    ``checkpoint`` until it ends (or ``timeout`` seconds); the query is stopped whatever happens."""
    query = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(timeout)
    finally:
        if query.isActive:
            query.stop()


class BatchSink:
    """A ``foreachBatch`` sink keyed by batch id, as an idempotent sink is (a re-run batch replaces its first
    attempt), remembering every attempt in order; it raises once, in batch ``fail_in``, after recording it (the
    batch ran, the sink failed before Spark could commit it). ``sort_rows``: keep each batch's rows sorted, and
    :meth:`rows` sorted, for tests whose key columns order rows (file, offset, ...) whatever Spark's order."""

    def __init__(self, columns: tuple[str, ...], fail_in: int | None = None, sort_rows: bool = False) -> None:
        self.columns = columns
        self.batches: dict[int, list[tuple]] = {}
        self.attempts: dict[int, list[list[tuple]]] = {}
        self.fail_in = fail_in
        self.sort_rows = sort_rows

    def __call__(self, df, batch_id: int) -> None:
        rows = [tuple(r) for r in df.select(*self.columns).collect()]
        if self.sort_rows:
            rows.sort()
        self.batches[batch_id] = rows
        self.attempts.setdefault(batch_id, []).append(rows)
        if batch_id == self.fail_in:
            self.fail_in = None
            raise RuntimeError(f"sink failure in batch {batch_id}")

    def rows(self) -> list[tuple]:
        """Every committed row, batch after batch, each batch in the order Spark gave it (sorted: ``sort_rows``)."""
        rows = [r for b in sorted(self.batches) for r in self.batches[b]]
        return sorted(rows) if self.sort_rows else rows


class ArrowSink:
    """A ``foreachBatch`` sink keyed by batch id (a re-run batch replaces its first attempt), each batch's rows as
    dicts of the batch's Arrow table (nested columns as dicts)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[dict[str, Any]]] = {}

    def __call__(self, df: Any, batch_id: int) -> None:
        self.batches[batch_id] = df.toArrow().to_pylist()

    def rows(self) -> list[dict[str, Any]]:
        """Every committed row, batch after batch."""
        return [r for _id, rows in sorted(self.batches.items()) for r in rows]
