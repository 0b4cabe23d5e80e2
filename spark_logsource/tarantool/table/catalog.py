"""The spaces of a WAL directory and how their formats changed: ``_space`` (280) and ``_index`` (288) replayed.

Built on the driver from the rows of the two system spaces in the snapshots and xlogs (read with the ``spaceId``
filter, so only those rows are decoded).  Files are taken in log order (``logrows.file_key``); a snapshot
resets the two spaces to its content, an xlog row changes them with Tarantool's semantics (``replay.py``).  After
each change the definition of the space it touches is recomputed; when it differs from the one before, a new
:class:`Version` starts at the row's position.  ``docs/formats/tarantool-typed.md`` has the layouts:

- ``_space`` tuple ``[id, owner, name, engine, field_count, flags, format]``; ``format`` an array of maps
  ``{name, type, is_nullable?, ...}`` (very old files: ``[name, type]`` pairs).
- ``_index`` tuple ``[space_id, iid, name, type, opts, parts]``; ``parts`` an array of maps ``{field (0-based),
  type, path?, ...}`` or, before 1.7.6, ``[field, type]`` pairs.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import CorruptDataError
from spark_logsource.io.fs import FileEntry, base_name
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.read.logrows import Position, file_key, iter_rows, read_vclock
from spark_logsource.tarantool.table.replay import ReplayError, TupleStore

__all__ = ["Catalog", "FieldDef", "SpaceDef", "SpaceHistory", "Version", "build_catalog"]

log = logging.getLogger(__name__)

SPACE_SPACE, INDEX_SPACE, TRUNCATE_SPACE = 280, 288, 330
_SPACE_NAMES = ("id", "owner", "name", "engine", "field_count", "flags", "format")
_INDEX_NAMES = ("id", "iid", "name", "type", "opts", "parts")
#: Spellings of field types in old formats → today's names.
_LEGACY_TYPES = {"num": "unsigned", "str": "string", "*": "any", "int": "integer"}


@dataclass(frozen=True, slots=True)
class FieldDef:
    name: str
    type: str
    nullable: bool


@dataclass(frozen=True, slots=True)
class SpaceDef:
    """One space as ``_space`` and ``_index`` define it at some point of the log."""

    id: int
    name: str
    fields: tuple[FieldDef, ...]
    #: index id → 0-based field numbers of its parts (None for a part on a JSON path inside a field)
    indexes: tuple[tuple[int, tuple[int, ...] | None], ...] = ()

    @property
    def names(self) -> dict[str, int]:
        return {f.name: i for i, f in enumerate(self.fields)}

    def index_parts(self, iid: int) -> tuple[int, ...] | None:
        return dict(self.indexes).get(iid)

    @property
    def primary_key(self) -> tuple[int, ...] | None:
        return self.index_parts(0)


@dataclass(frozen=True, slots=True)
class Version:
    """``space`` is in force from ``position`` on (None: dropped); ``lsn`` is the LSN it is current as of."""

    position: Position
    lsn: int
    space: SpaceDef | None


@dataclass(slots=True)
class SpaceHistory:
    """Every definition one space id had, in log order."""

    space_id: int
    versions: list[Version] = field(default_factory=list)

    def at(self, position: Position) -> SpaceDef | None:
        """The definition in force at a row at ``position`` (None: the log does not say what the space was)."""
        i = bisect.bisect_right([v.position for v in self.versions], position) - 1
        return self.versions[i].space if i >= 0 else None

    def as_of_lsn(self, lsn: int | None) -> SpaceDef | None:
        """The definition after every change up to ``lsn`` (None: the last one)."""
        chosen = None
        for v in self.versions:
            if lsn is None or v.lsn <= lsn:
                chosen = v.space
        return chosen

    def defined(self) -> list[SpaceDef]:
        return [v.space for v in self.versions if v.space is not None]


@dataclass(slots=True)
class Catalog:
    histories: dict[int, SpaceHistory] = field(default_factory=dict)

    def resolve(self, space: str) -> int | None:
        """A space id from its number or any name it had (the last space to carry the name wins)."""
        if space.strip().isdigit():
            return int(space)
        found, latest = None, None
        for sid, hist in self.histories.items():
            for v in hist.versions:
                if v.space is not None and v.space.name == space and (latest is None or v.position > latest):
                    found, latest = sid, v.position
        return found

    def names(self) -> list[str]:
        out: set[str] = set()
        for hist in self.histories.values():
            out.update(d.name for d in hist.defined())
        return sorted(out)


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _parse_format(raw: Any) -> tuple[FieldDef, ...]:
    out = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict):
            name, ftype = _text(item.get("name")), _text(item.get("type")) or "any"
            nullable = bool(item.get("is_nullable", False))
        elif isinstance(item, list) and len(item) >= 2:
            name, ftype, nullable = _text(item[0]), _text(item[1]) or "any", False
        else:
            continue
        if name is None:
            continue
        ftype = ftype.lower()
        out.append(FieldDef(name, _LEGACY_TYPES.get(ftype, ftype), nullable))
    return tuple(out)


def _parse_parts(raw: Any) -> tuple[int, ...] | None:
    parts = []
    for part in raw if isinstance(raw, list) else ():
        if isinstance(part, dict):
            if part.get("path") is not None:
                return None
            fno = part.get("field")
        elif isinstance(part, list) and part:
            fno = part[0]
        else:
            return None
        if not isinstance(fno, int) or isinstance(fno, bool) or fno < 0:
            return None
        parts.append(fno)
    return tuple(parts)


def space_def(space_tuple: list[Any], index_tuples: Sequence[list[Any]]) -> SpaceDef | None:
    """A :class:`SpaceDef` from a ``_space`` tuple and the ``_index`` tuples of that space."""
    if len(space_tuple) < 3 or not isinstance(space_tuple[0], int):
        return None
    fmt = _parse_format(space_tuple[6]) if len(space_tuple) > 6 else ()
    indexes = tuple(sorted((t[1], _parse_parts(t[5] if len(t) > 5 else None))
                           for t in index_tuples if len(t) > 1 and isinstance(t[1], int)))
    return SpaceDef(space_tuple[0], _text(space_tuple[2]) or str(space_tuple[0]), fmt, indexes)


class _CatalogBuilder:
    def __init__(self) -> None:
        self.spaces = TupleStore([0])
        self.indexes = TupleStore([0, 1])
        self.catalog = Catalog()

    def current(self, sid: int) -> SpaceDef | None:
        row = self.spaces.rows.get((sid,))
        if row is None:
            return None
        return space_def(row, [t for k, t in self.indexes.rows.items() if k[0] == sid])

    def record(self, sid: int, position: Position, lsn: int) -> None:
        now = self.current(sid)
        hist = self.catalog.histories.setdefault(sid, SpaceHistory(sid))
        last = hist.versions[-1].space if hist.versions else None
        if not hist.versions or now != last:
            hist.versions.append(Version(position, lsn, now))

    def names_of(self, sid: int, default: Sequence[str]) -> dict[str, int]:
        d = self.current(sid)
        if d is not None and d.fields:
            return d.names
        return {n: i for i, n in enumerate(default)}

    def apply(self, row: Any) -> int | None:
        """Apply one row of 280/288; the id of the user space it defines."""
        store, default = (self.spaces, _SPACE_NAMES) if row.space_id == SPACE_SPACE else (self.indexes, _INDEX_NAMES)
        names = self.names_of(row.space_id, default)
        if row.index_id:  # DDL goes through the primary keys; anything else is not replayed, rather than guessed
            raise ReplayError(f"{row.type} of space {row.space_id} through its index {row.index_id}")
        store.apply(row.type, key=row.key, tup=row.tuple, ops=row.ops, index_base=row.index_base, names=names,
                    index_parts=None)
        source = row.tuple if isinstance(row.tuple, list) else row.key
        return source[0] if isinstance(source, list) and source and isinstance(source[0], int) else None


def _replay_file(builder: _CatalogBuilder, uri: str, snapshot: bool, common: CommonOptions) -> None:
    """The ``_space`` and ``_index`` rows of one file, applied to ``builder`` (history recorded for xlogs)."""
    for row in iter_rows(uri, (SPACE_SPACE, INDEX_SPACE), common):
        if row.error is not None:
            if common.mode is ParseMode.FAILFAST:
                raise row.error
            log.warning("catalog: skipping a bad region (a space definition may be missing): %s", row.error)
            continue
        try:
            sid = builder.apply(row)
        except ReplayError as exc:
            err = CorruptDataError(row.path, row.offset, f"lsn {row.lsn}: cannot apply to the catalog: {exc}")
            if common.mode is ParseMode.FAILFAST:
                raise err from None
            log.warning("%s", err)
            continue
        if not snapshot and sid is not None:
            builder.record(sid, row.position, row.lsn or 0)


def build_catalog(files: Sequence[FileEntry], common: CommonOptions) -> Catalog:
    """Replay ``_space`` and ``_index`` through ``files`` (the snapshots and xlogs of one instance)."""
    builder = _CatalogBuilder()
    ordered = sorted((f for f in files if file_key(f.uri)[1] in (0, 1) and base_name(f.uri).endswith(
        (".snap", ".xlog"))), key=lambda f: (file_key(f.uri), f.uri))
    newest_snapshot = max((file_key(f.uri)[0] for f in ordered if file_key(f.uri)[1] == 0), default=None)
    for entry in ordered:
        sig, kind = file_key(entry.uri)
        snapshot = kind == 0
        if snapshot:
            before = set(builder.catalog.histories) | {k[0] for k in builder.spaces.rows}
            builder.spaces.clear()
            builder.indexes.clear()
            try:
                vclock = read_vclock(entry.uri)
            except (CorruptDataError, OSError):
                vclock = {}
            snap_lsn = max((v for r, v in vclock.items() if r != 0), default=0)
        try:
            _replay_file(builder, entry.uri, snapshot, common)
        except FileNotFoundError:
            if snapshot or newest_snapshot is None or sig >= newest_snapshot:
                raise
            # Collected by the server since it was listed (a file, once open, stays readable): a later snapshot
            # holds what it defined, and its rows are gone with it, so no row left to name needs its definitions.
            log.debug("catalog: %s was collected since it was listed; the snapshot %s covers it", entry.uri,
                      newest_snapshot)
        if snapshot:
            now = {k[0] for k in builder.spaces.rows}
            for sid in sorted(before | now):
                builder.record(sid, (sig, 0, 0, 0), snap_lsn)
    return builder.catalog
