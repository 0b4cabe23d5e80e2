"""The delta-rs steps of docs/tarantool-cdc.md ("With delta-rs"), as a user writes them: create the target, fetch
the rows a batch touches, ``apply_changes`` under the high-water mark, one MERGE that writes the new mark in its own
commit. A column the space gained since the target was created is added to the target first."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.tarantool.table.apply import Applied, SpaceSpec, apply_changes, touched_keys

log = logging.getLogger(__name__)

APP_ID = "spark-logsource:tarantool:cdc-crash"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _flagged(table: pa.Table, schema: pa.Schema, delete: bool) -> pa.Table:
    """``table`` with every column of ``schema`` (nulls where it has none) and ``_delete`` set to ``delete``."""
    columns = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    flag = pa.array([delete] * table.num_rows, pa.bool_())
    return pa.Table.from_arrays([*columns, flag], schema=schema.append(pa.field("_delete", pa.bool_())))


def apply_batch(path: Path, spec: SpaceSpec, changes: pa.Table) -> Applied:
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
    from deltalake.schema import Field

    schema = spec.schema()
    if not DeltaTable.is_deltatable(str(path)):
        write_deltalake(str(path), schema.empty_table())
    target = DeltaTable(str(path))
    missing = [f for f in schema if f.name not in {g.name for g in target.schema().fields}]
    if missing:  # the space's format gained a field: ALTER TABLE … ADD COLUMN on the target first
        log.info("adding %s to the target", [f.name for f in missing])
        target.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in missing])
        target = DeltaTable(str(path))
    done = target.transaction_version(APP_ID)
    stored = target.to_pyarrow_table()
    mask = pa.array([False] * stored.num_rows, pa.bool_())
    for names, keys in touched_keys(spec, changes):  # one-column keys here
        hit = pc.is_in(stored.column(names[0]), value_set=keys.column(names[0]).combine_chunks())
        mask = pc.or_(mask, pc.fill_null(hit, False))
    result = apply_changes(spec, changes, stored.filter(mask).select(schema.names), done)
    if not result.applied or result.last_seq is None:
        return result  # nothing new: a batch applied before (the mark alone cannot say so: a snapshot read in
        # several batches gives each the same seq)
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
