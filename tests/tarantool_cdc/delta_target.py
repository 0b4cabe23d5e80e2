"""The delta-rs side of the recipe in ``docs/tarantool-cdc.md``: fetch the rows a batch touches, apply, MERGE.

The same steps as the Spark ``foreachBatch`` of the doc, with the ``deltalake`` package instead of a JVM, so the
test runs them for real: the high-water mark is a Delta transaction identifier (``app_id`` → the last ``seq``
stored), written in the MERGE's own commit.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from spark_logsource.tarantool.table.apply import Applied, SpaceSpec, apply_changes, touched_keys

APP_ID = "spark-logsource:tarantool:cdc"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fetch_touched(target: DeltaTable, spec: SpaceSpec, changes: pa.Table) -> pa.Table:
    """The target rows whose primary key or secondary key a change of the batch names."""
    stored = target.to_pyarrow_table()
    mask = pa.array([False] * stored.num_rows, pa.bool_())
    for names, keys in touched_keys(spec, changes):
        if len(names) != 1:
            raise NotImplementedError("composite keys: use a semi join")
        hit = pc.is_in(stored.column(names[0]), value_set=keys.column(names[0]).combine_chunks())
        mask = pc.or_(mask, pc.fill_null(hit, False))
    return stored.filter(mask)


def apply_batch(path: Path, spec: SpaceSpec, changes: pa.Table) -> Applied:
    """One micro-batch: create the target if needed, apply the changes to the rows they touch, one MERGE."""
    if not DeltaTable.is_deltatable(str(path)):
        write_deltalake(str(path), spec.schema().empty_table())
    target = DeltaTable(str(path))
    done = target.transaction_version(APP_ID)
    result = apply_changes(spec, changes, fetch_touched(target, spec, changes), done)
    if result.last_seq is None or not result.applied:
        return result  # nothing new: a batch applied before (the tuples of a snapshot share one seq: docs)
    upserts = result.upserts.append_column("_delete", pa.array([False] * result.upserts.num_rows, pa.bool_()))
    deletes = result.deletes
    for f in upserts.schema:
        if f.name not in deletes.column_names:
            deletes = deletes.append_column(f, pa.nulls(deletes.num_rows, f.type) if f.name != "_delete"
                                            else pa.array([True] * deletes.num_rows, pa.bool_()))
    source = pa.concat_tables([upserts, deletes.select(upserts.column_names)])
    on = " AND ".join(f"t.{_q(k)} = s.{_q(k)}" for k in spec.key_columns)
    assign = {_q(c): f"s.{_q(c)}" for c in spec.schema().names}
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
