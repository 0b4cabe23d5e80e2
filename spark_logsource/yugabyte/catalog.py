"""Table schemas of a tablet, as its WAL records them: the segment header's schema and each CHANGE_METADATA_OP's.

A :class:`TableSchema` names columns by id and knows how a packed row (``z``) of its version lays out its
columns (``docs/formats/yugabyte-wal.md``, "Packed rows"). A :class:`SchemaCatalog` maps schema versions to
schemas while a tablet's log is read in order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

__all__ = ["ColumnInfo", "PackedColumn", "SchemaCatalog", "TableSchema"]

#: Bytes of a fixed-size packed column (its value-type byte included), by DataType name.
_FIXED_SIZES = {
    "BOOL": 1, "INT8": 5, "INT16": 5, "INT32": 5, "UINT8": 5, "UINT16": 5, "UINT32": 5, "FLOAT": 5, "DATE": 5,
    "INT64": 9, "UINT64": 9, "DOUBLE": 9, "TIMESTAMP": 9, "TIME": 9,
}
_COLLECTIONS = frozenset({"LIST", "MAP", "SET", "USER_DEFINED_TYPE", "TUPLE"})


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    id: int
    name: str
    type: str
    is_key: bool
    is_hash_key: bool
    is_nullable: bool
    is_static: bool


@dataclass(frozen=True, slots=True)
class PackedColumn:
    """One column of a packed row: fixed ``size`` bytes, or varlen (``size`` None, end offset in the row head)."""

    id: int
    name: str
    type: str
    size: int | None


class TableSchema:
    """One version of a table's schema."""

    def __init__(self, pb: dict[str, Any], version: int | None) -> None:
        self.version = version
        cols: list[ColumnInfo] = []
        for c in pb.get("columns") or []:
            main = (c.get("type") or {}).get("main")
            cols.append(ColumnInfo(
                id=int(c.get("id", len(cols))), name=str(c.get("name", "")), type=str(main),
                is_key=bool(c.get("is_key", False)), is_hash_key=bool(c.get("is_hash_key", False)),
                is_nullable=bool(c.get("is_nullable", False)), is_static=bool(c.get("is_static", False)),
            ))
        self.columns = cols
        self.by_id = {c.id: c for c in cols}
        self.hash_columns = [c.name for c in cols if c.is_key and c.is_hash_key]
        self.range_columns = [c.name for c in cols if c.is_key and not c.is_hash_key]
        # YSQL tables carry PostgreSQL type oids / a schema name; YCQL and system tables do not.
        self.is_ysql = bool(pb.get("pgschema_name")) or any(c.get("pg_type_oid") for c in pb.get("columns") or [])
        packed = []
        for c in cols:
            if c.is_key or c.is_static or c.type in _COLLECTIONS:
                continue
            fixed = _FIXED_SIZES.get(c.type)
            varlen = not self.is_ysql or c.is_nullable or fixed is None
            packed.append(PackedColumn(c.id, c.name, c.type, None if varlen else fixed))
        self.packed_columns = packed
        self.num_varlen = sum(1 for p in packed if p.size is None)

    def column_name(self, column_id: int) -> str | None:
        col = self.by_id.get(column_id)
        return None if col is None else col.name

    def column_type(self, column_id: int) -> str | None:
        col = self.by_id.get(column_id)
        return None if col is None else col.type


#: Stamps of catalog states: a new catalog, or a change to one, takes the next (fast.py hands changes to the kernel).
_STAMPS = itertools.count(1)


class SchemaCatalog:
    """Schema versions seen so far in one tablet's log; the latest one names unpacked columns."""

    def __init__(self) -> None:
        self.versions: dict[int, TableSchema] = {}
        self.current: TableSchema | None = None
        #: Changes with every schema added (unique across catalogs).
        self.stamp = next(_STAMPS)

    def add(self, pb: dict[str, Any] | None, version: int | None) -> None:
        if not pb:
            return
        schema = _table_schema(pb, version)
        before = (self.versions.get(version) if version is not None else None, self.current)
        if version is not None:
            self.versions[version] = schema
        if self.current is None or version is None or self.current.version is None or \
                version >= self.current.version:
            self.current = schema
        if (self.versions.get(version) if version is not None else None, self.current) != before:
            self.stamp = next(_STAMPS)

    def version(self, number: int) -> TableSchema | None:
        return self.versions.get(number)


_BUILT: dict[tuple[int, int | None], tuple[dict[str, Any], TableSchema]] = {}


def _table_schema(pb: dict[str, Any], version: int | None) -> TableSchema:
    """A TableSchema per decoded schema dict (the decoder hands out one dict per distinct schema bytes)."""
    key = (id(pb), version)
    hit = _BUILT.get(key)
    if hit is not None and hit[0] is pb:
        return hit[1]
    if len(_BUILT) >= 256:
        _BUILT.clear()
    schema = TableSchema(pb, version)
    _BUILT[key] = (pb, schema)
    return schema
