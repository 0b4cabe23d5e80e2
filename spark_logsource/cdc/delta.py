"""Apply a batch of typed changes to a Delta table with one MERGE (delta-rs, the ``deltalake`` package).

The target holds the table's columns and the order column (``seq``), which is what makes the MERGE idempotent: a
change is applied only when its order value is above the one stored for its key, so a batch delivered again, or a
change older than the stored row, never overwrites a newer one. The rules, and why they give exactly-once results
with offsets committed after the MERGE, are in ``docs/cdc.md``. ``deltalake`` is imported only when called (it is
an optional dependency, in the ``test`` extra).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.cdc.latest import latest_changes, truncated_at
from spark_logsource.errors import OptionError

if TYPE_CHECKING:
    from deltalake import DeltaTable

log = logging.getLogger(__name__)


def _name(column: str) -> str:
    """A column name as delta-rs' SQL reads it: quoted, so case and odd characters survive."""
    return '"' + column.replace('"', '""') + '"'


def _literal(value: Any) -> str:
    """An order value as an SQL literal (an integer or a decimal with scale 0: ``seq`` is decimal(38,0))."""
    text = str(value)
    if not text.lstrip("-").isdigit():
        raise OptionError("order", f"the truncate's order value {value!r} is not an integer")
    return text


def _open(table: str | Path | DeltaTable, schema: pa.Schema, storage_options: dict[str, str] | None) -> DeltaTable:
    """The target table, created empty with ``schema`` when ``table`` is a location that holds none yet."""
    from deltalake import DeltaTable, write_deltalake

    if isinstance(table, DeltaTable):
        return table
    uri = str(table)
    if not DeltaTable.is_deltatable(uri, storage_options=storage_options):
        log.info("creating the Delta table %s for the merged changes", uri)
        write_deltalake(uri, schema.empty_table(), mode="error", storage_options=storage_options)
    return DeltaTable(uri, storage_options=storage_options)


def merge_into_delta(table_uri_or_delta: str | Path | DeltaTable, changes: pa.Table | pa.RecordBatch,
                     keys: Sequence[str], order: str = "seq", *,
                     storage_options: dict[str, str] | None = None) -> dict[str, Any]:
    """Merge ``changes`` (a typed view's rows, or their flat projection) into a Delta table; return delta-rs'
    merge metrics (empty when there was nothing to do).

    Each key's last change (:func:`~spark_logsource.cdc.latest.latest_changes`) is merged on ``keys``: a delete
    removes the stored row, another change updates it, each only when its ``order`` value is above the stored one;
    a key not stored is inserted unless the change is a delete. A truncate in the batch deletes, in the same
    commit, every stored row not touched by the batch whose order value is below the truncate's. The target is
    created from the changes' columns (without ``op``) when ``table_uri_or_delta`` names no Delta table yet.
    """
    latest = latest_changes(changes, keys, order)
    cut = truncated_at(latest, order)
    rows = latest.filter(pc.not_equal(latest.column("op"), "t"))
    columns = [name for name in latest.column_names if name != "op"]
    target = _open(table_uri_or_delta, latest.select(columns).schema, storage_options)
    if rows.num_rows == 0 and cut is None:
        return {}
    stored = {field.name for field in target.schema().fields}
    missing = [name for name in columns if name not in stored]
    if missing:
        raise OptionError("changes", f"the target Delta table has no column {', '.join(map(repr, missing))}")
    on = " AND ".join(f"t.{_name(k)} = s.{_name(k)}" for k in keys)
    newer = f"s.{_name(order)} > t.{_name(order)}"
    assign = {_name(name): f"s.{_name(name)}" for name in columns}
    merger = (target.merge(rows, predicate=on, source_alias="s", target_alias="t")
              .when_matched_delete(f"s.op = 'd' AND {newer}")
              .when_matched_update(assign, predicate=newer)
              .when_not_matched_insert(assign, predicate="s.op <> 'd'"))
    if cut is not None:
        merger = merger.when_not_matched_by_source_delete(f"t.{_name(order)} < {_literal(cut)}")
    metrics: dict[str, Any] = merger.execute()
    log.debug("merged %d changes (truncate below %s): %s", rows.num_rows, cut, metrics)
    return metrics
