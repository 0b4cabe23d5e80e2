"""The last change per key of a batch of typed changes, laid out flat for a MERGE.

A micro-batch may change one key several times; a MERGE takes at most one source row per target row, so the batch
is first reduced to each key's last change by the order column (``seq``: it orders a table's changes totally,
``docs/cdc.md``). A truncate (``op='t'``) makes every earlier change of the batch moot: they are dropped, and the
output starts with that truncate's row so the caller deletes the target's older rows first (:func:`truncated_at`).
Sorting and grouping are pyarrow compute kernels, never a Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.cdc.flat import flat_view, refuse_error_rows
from spark_logsource.errors import OptionError

_INDEX = "__spark_logsource_row"


def latest_changes(batch_or_table: pa.Table | pa.RecordBatch, keys: Sequence[str], order: str = "seq") -> pa.Table:
    """Each key's last change in ``batch_or_table``, flat: ``op``, ``order`` and the row's fields at top level.

    ``batch_or_table`` holds a typed view's rows (``op``, ``before``, ``after``, ``order``) or their flat
    projection (:func:`~spark_logsource.cdc.flat.flat_view`). The output has one row per key that changed, sorted by
    ``order``, a delete's fields taken from its ``before`` image. When the batch holds a truncate, the changes up to
    the last one are dropped and the output's first row is that truncate (``op='t'``, null fields): see
    :func:`truncated_at`.
    """
    if not keys:
        raise OptionError("keys", "at least one key column is needed to find each key's last change")
    flat = flat_view(batch_or_table, keys, order)
    for key in keys:
        if key not in flat.column_names:
            raise OptionError("keys", f"{key!r} is not a column of the changes")
    if order not in flat.column_names:
        raise OptionError("order", f"the changes have no column {order!r}")
    if flat.num_rows == 0:
        return flat
    refuse_error_rows(flat)  # a flat projection made by Spark may still hold them
    truncates = flat.filter(pc.equal(flat.column("op"), "t"))
    head = None
    if truncates.num_rows:
        last = pc.max(truncates.column(order))
        head = truncates.filter(pc.equal(truncates.column(order), last)).slice(0, 1)
        flat = flat.filter(pc.greater(flat.column(order), last))
    rows = flat.filter(pc.not_equal(flat.column("op"), "t"))
    if rows.num_rows:
        rows = rows.take(pc.sort_indices(rows, sort_keys=[(order, "ascending")]))
        numbered = rows.select(list(keys)).append_column(_INDEX, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        last_rows = numbered.group_by(list(keys), use_threads=False).aggregate([(_INDEX, "max")])
        picked = pc.sort_indices(last_rows.column(f"{_INDEX}_max"))
        rows = rows.take(pc.take(last_rows.column(f"{_INDEX}_max"), picked))
    return rows if head is None else pa.concat_tables([head, rows])


def truncated_at(changes: pa.Table, order: str = "seq") -> Any:
    """The order value of the truncate :func:`latest_changes` put first, or None: before applying the rest, delete
    the target's rows whose stored order value is below it (rows stored from later changes stay)."""
    if changes.num_rows == 0 or changes.column("op")[0].as_py() != "t":
        return None
    return changes.column(order)[0].as_py()
