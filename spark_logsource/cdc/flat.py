"""The flat projection of typed change rows: ``op``, the order column and the row's fields at top level.

The typed views (``view=table``, ``docs/formats/mysql-typed.md``) give each change as ``op`` with the row images
``before`` and ``after`` as structs. A MERGE and AUTO CDC both need the row's columns at top level (AUTO CDC's
``keys`` and ``sequence_by`` are unqualified column names), so this module lays a change out flat: the fields of
``after``, or of ``before`` for a delete. An update that changes the key is two rows here, a delete of the old key
and the update of the new one, both at the change's order value: otherwise the old key would stay in the target.
Arrow in, Arrow out, vectorized; :func:`flat_view_sql` gives the same projection as Spark SQL expressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.errors import CorruptDataError, OptionError

#: The ops a typed view writes: insert, update, delete, a snapshot row, a truncate of the whole table.
OPS = ("c", "u", "d", "r", "t")


class SparkFrame(Protocol):
    """What :func:`flat_view` uses of a Spark DataFrame (so this package never imports pyspark)."""

    @property
    def columns(self) -> list[str]: ...

    @property
    def schema(self) -> Any: ...  # only spark_to_arrow reads it (a pipeline's query function may not)

    def selectExpr(self, *expr: str) -> Any: ...

    def toArrow(self) -> Any: ...


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier (backticks doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def is_flat(table: pa.Table) -> bool:
    """Whether ``table`` is already a flat projection (it has no ``after`` image)."""
    return "after" not in table.column_names


def _as_table(changes: pa.Table | pa.RecordBatch) -> pa.Table:
    if isinstance(changes, pa.RecordBatch):
        return pa.Table.from_batches([changes])
    return changes


def _check_columns(names: Sequence[str], fields: Sequence[str], keys: Sequence[str], order: str) -> None:
    for column in ("op", order):
        if column not in names:
            raise OptionError("order" if column == order else "op",
                              f"the changes have no column {column!r} (columns: {', '.join(names)})")
    lowered = {f.lower() for f in fields}
    for reserved in ("op", order):
        if reserved.lower() in lowered:
            raise OptionError("order", f"the table has a column named {reserved!r}, which the flat projection "
                                       "uses for the change itself: rename it in a projection first")
    for key in keys:
        if key not in fields:
            raise OptionError("keys", f"{key!r} is not a column of the table (columns: {', '.join(fields)})")


def refuse_error_rows(table: pa.Table) -> None:
    """An error row (``op`` null) holds no image: a MERGE would silently miss that change, so it stops here."""
    missing = pc.is_null(table.column("op"))
    if not pc.any(missing).as_py():
        return
    first = table.filter(missing).slice(0, 1).to_pylist()[0]
    source = first.get("source") or {"file": "the changes", "pos": None}
    reason = first.get("_corrupt_record") or "no op"
    raise CorruptDataError(source.get("file"), source.get("pos"),
                           f"a change that could not be decoded ({reason}) cannot be merged; read with "
                           "mode=FAILFAST to stop at it, or DROPMALFORMED to skip it knowingly")


def _key_changed(before: pa.StructArray, after: pa.StructArray, keys: Sequence[str]) -> pa.ChunkedArray:
    """Per row: an update whose key differs between the images (null-aware: null equals null)."""
    changed = None
    for key in keys:
        b, a = pc.struct_field(before, key), pc.struct_field(after, key)
        same = pc.or_kleene(pc.and_(pc.is_null(b), pc.is_null(a)), pc.fill_null(pc.equal(b, a), False))
        differs = pc.invert(same)
        changed = differs if changed is None else pc.or_(changed, differs)
    return changed


def flat_view(changes: pa.Table | pa.RecordBatch | SparkFrame, keys: Sequence[str] = (), order: str = "seq") -> Any:
    """The flat projection of typed change rows: ``op``, ``order``, then every field of the row at top level.

    ``changes`` is an Arrow table or batch of a typed view (or a Spark DataFrame of one: then the projection is
    :func:`flat_view_sql`'s expressions, run by Spark). A delete's fields come from ``before``, the other ops' from
    ``after``; a truncate (``op='t'``) has null fields. With ``keys``, an update that changes the key also gives a
    delete of the old key at the same order value. An error row (``op`` null) raises
    :class:`~spark_logsource.errors.CorruptDataError` with its file and position. A table that is already flat is
    returned as it is.
    """
    if not isinstance(changes, (pa.Table, pa.RecordBatch)):
        # no look at the schema here: a pipeline's query function may not analyse a DataFrame (Spark checks the
        # names when it analyses the projection)
        first, second = flat_view_sql(keys, order)
        return changes.selectExpr(*first).selectExpr(*second)
    table = _as_table(changes)
    if is_flat(table):
        return table
    fields = [field.name for field in table.schema.field("after").type]
    _check_columns(table.column_names, fields, keys, order)
    refuse_error_rows(table)
    op = table.column("op")
    before = table.column("before")
    after = table.column("after")
    is_delete = pc.equal(op, "d")
    columns: dict[str, Any] = {"op": op, order: table.column(order)}
    for name in fields:
        columns[name] = pc.if_else(is_delete, pc.struct_field(before, name), pc.struct_field(after, name))
    flat = pa.table(columns)
    if keys:
        moved = pc.and_(pc.equal(op, "u"), _key_changed(before, after, keys))
        if pc.any(moved).as_py():
            old = table.filter(moved)
            gone: dict[str, Any] = {"op": pa.repeat(pa.scalar("d", pa.string()), old.num_rows),
                                    order: old.column(order)}
            for name in fields:
                gone[name] = pc.struct_field(old.column("before"), name)
            flat = pa.concat_tables([pa.table(gone, schema=flat.schema), flat])
    return flat


def flat_view_sql(keys: Sequence[str] = (), order: str = "seq") -> tuple[list[str], list[str]]:
    """Spark SQL for :func:`flat_view`: two ``selectExpr`` lists, applied one after the other.

    The first makes one or two rows per change (``inline`` over an array of ``(op, row)`` structs: the delete of
    the old key when an update changes it, then the change itself); the second lifts the row's fields to top level.
    """
    row = "CASE WHEN op = 'd' THEN before ELSE after END"
    current = f"named_struct('op', op, 'row', {row})"
    if keys:
        changed = " OR ".join(f"NOT (before.{quote(k)} <=> after.{quote(k)})" for k in keys)
        moved = f"CASE WHEN op = 'u' AND ({changed}) THEN named_struct('op', 'd', 'row', before) END"
        rows = f"inline(filter(array({moved}, {current}), x -> x IS NOT NULL))"
    else:
        rows = f"inline(array({current}))"
    return [quote(order), rows], ["op", quote(order), "`row`.*"]


def spark_to_arrow(frame: SparkFrame) -> pa.Table:
    """A Spark DataFrame's rows as Arrow (``DataFrame.toArrow``), also when a top-level VARIANT column holds nulls.

    pyspark 4.3's ``toArrow`` fails on a null VARIANT (its final cast refuses the null value and metadata children
    under a null row). So each top-level variant column is collected with JSON ``null`` in place of SQL NULL,
    beside a flag saying where it was NULL, and the NULLs are put back in Arrow. Variants inside structs are not
    handled: flatten first (:func:`flat_view`).
    """
    variants = [field.name for field in frame.schema.fields if field.dataType.typeName() == "variant"]
    if not variants:
        return frame.toArrow()
    flags = {name: f"__spark_logsource_null_{k}" for k, name in enumerate(variants)}
    select = []
    for name in frame.columns:
        if name in flags:
            select.append(f"coalesce({quote(name)}, parse_json('null')) AS {quote(name)}")
            select.append(f"{quote(name)} IS NULL AS {flags[name]}")
        else:
            select.append(quote(name))
    table = frame.selectExpr(*select).toArrow()
    for name, flag in flags.items():
        column = table.column(name)
        restored = pc.if_else(table.column(flag), pa.scalar(None, column.type), column)
        table = table.set_column(table.column_names.index(name), name, restored).drop_columns([flag])
    return table
