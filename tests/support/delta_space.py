"""The delta-rs steps of ``docs/tarantool-cdc.md`` ("With delta-rs"), as a user writes them, for the tests that run
them for real (``tests/tarantool_cdc``, and the streaming job of ``tests/cdc_crash``): create the target, add the
columns the source gained since, fetch the rows a batch touches, ``apply_changes`` under the high-water mark, one
MERGE that writes the new mark in its own commit.

The same steps as the Spark ``foreachBatch`` of the doc, with the ``deltalake`` package instead of a JVM: the
high-water mark is a Delta transaction identifier (:data:`APP_ID` → the last ``seq`` stored)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.tarantool.table.apply import Applied, SpaceSpec, apply_changes, touched_keys

log = logging.getLogger(__name__)

APP_ID = "spark-logsource:tarantool:cdc"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def add_missing_columns(path: str, schema: pa.Schema) -> None:
    """``ALTER TABLE … ADD COLUMN`` on the Delta table at ``path`` for each column of ``schema`` it lacks (nullable:
    older rows have none); nothing if there is no table yet."""
    from deltalake import DeltaTable
    from deltalake.schema import Field

    if not DeltaTable.is_deltatable(path):
        return
    target = DeltaTable(path)
    stored = {f.name for f in target.schema().fields}
    missing = [f for f in schema if f.name not in stored]
    if missing:
        log.info("adding the columns %s to the target", [f.name for f in missing])
        target.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in missing])


def fetch_touched(target: Any, spec: SpaceSpec, changes: pa.Table) -> pa.Table:
    """The rows of ``target`` (a ``DeltaTable``) whose primary key or a unique secondary key a change of the batch
    names, with the columns of ``spec``."""
    stored = target.to_pyarrow_table()
    mask = pa.array([False] * stored.num_rows, pa.bool_())
    for names, keys in touched_keys(spec, changes):
        if len(names) != 1:
            raise NotImplementedError("composite keys: use a semi join")
        hit = pc.is_in(stored.column(names[0]), value_set=keys.column(names[0]).combine_chunks())
        mask = pc.or_(mask, pc.fill_null(hit, False))
    return stored.filter(mask).select(spec.schema().names)


def _flagged(table: pa.Table, schema: pa.Schema, delete: bool) -> pa.Table:
    """``table`` with every column of ``schema`` (nulls where it has none) and ``_delete`` set to ``delete``."""
    columns = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    flag = pa.array([delete] * table.num_rows, pa.bool_())
    return pa.Table.from_arrays([*columns, flag], schema=schema.append(pa.field("_delete", pa.bool_())))


def apply_batch(path: Path, spec: SpaceSpec, changes: pa.Table) -> Applied:
    """One micro-batch: create the target if needed (or add the columns the space gained), apply the changes to the
    rows they touch, one MERGE."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    schema = spec.schema()
    if not DeltaTable.is_deltatable(str(path)):
        write_deltalake(str(path), schema.empty_table())
    add_missing_columns(str(path), schema)  # the space's format gained a field
    target = DeltaTable(str(path))
    done = target.transaction_version(APP_ID)
    result = apply_changes(spec, changes, fetch_touched(target, spec, changes), done)
    if not result.applied or result.last_seq is None:
        # nothing new: a batch applied before (the mark alone cannot say so: the tuples of a snapshot read in
        # several batches share one seq)
        return result
    source = pa.concat_tables([_flagged(result.upserts, schema, False), _flagged(result.deletes, schema, True)])
    on = " AND ".join(f"t.{_q(k)} = s.{_q(k)}" for k in spec.key_columns)
    assign = {_q(c): f"s.{_q(c)}" for c in schema.names}
    merger = (target.merge(source, predicate=on, source_alias="s", target_alias="t",
                           commit_properties=CommitProperties(app_transactions=[Transaction(APP_ID,
                                                                                            result.last_seq)]))
              .when_matched_delete("s._delete AND s.seq > t.seq")
              .when_matched_update(assign, predicate="NOT s._delete AND s.seq > t.seq")
              .when_not_matched_insert(assign, predicate="NOT s._delete"))
    if result.truncated_at is not None:
        merger = merger.when_not_matched_by_source_delete(f"t.seq < {int(result.truncated_at)}")
    merger.execute()
    return result
