"""``view=space`` in a stream: the space's definition carried in the offsets, and the DDL between two offsets.

``docs/formats/tarantool-typed.md`` "Streaming" states the rules.  A stream's Spark schema is fixed when the query
starts, before Spark says which checkpoint offset it resumes from.  So each offset holds, besides its position,
the space's ``_space`` tuple and ``_index`` tuples in force there (``"space"``: JSON).  The definition history then
lives in Spark's own offset log: a restarted query knows the format at its checkpoint without a side store.
Between two offsets the driver replays the rows of ``_space`` (280) and ``_index`` (288) of the range that touch
the space on top of the start's tuples (:class:`SpaceFollower`); the slices carry the resulting versions to the
executors, which name each row by the version in force at its place in the log.

A change whose new format the fixed schema cannot name (a new field, a field renamed or retyped), a drop of the
space, or a row of ``_space``/``_index`` for the space that cannot be replayed stops the stream: the range ends at
the block before the row (a block boundary is a transaction boundary), and the next call raises
:class:`~spark_logsource.errors.SchemaChangeError` naming the row, its LSN and the position.
"""

from __future__ import annotations

import base64
import copy
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_logsource.errors import CorruptDataError, OptionError, SchemaChangeError
from spark_logsource.io.fs import FileEntry, base_name
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.read.logrows import LogRow, file_key, iter_rows
from spark_logsource.tarantool.table.catalog import INDEX_SPACE, SPACE_SPACE, SpaceDef, Version, space_def
from spark_logsource.tarantool.table.catalog import _CatalogBuilder as CatalogBuilder
from spark_logsource.tarantool.table.replay import ReplayError
from spark_logsource.tarantool.table.typed import VARIANT, arrow_type, column_name

if TYPE_CHECKING:
    from spark_logsource.streaming.stream import Offset
    from spark_logsource.tarantool.table.space_view import SpaceView

__all__ = ["SPACE_KEY", "SpaceFollower", "SpaceState", "catalog_state", "from_json_value", "to_json_value"]

log = logging.getLogger(__name__)

#: The key of the space's state in an offset.
SPACE_KEY = "space"
#: The position of the version an offset's state stands for: before every row of the log.
SEED = (-1, 0, 0, 0)
CATALOG_SPACES = (SPACE_SPACE, INDEX_SPACE)
_RESTART = ("restart the query on its checkpoint: the restarted query's schema includes the new format and it "
            "goes on from this change")
_NO_RESTART = "the stream cannot go on past it: read the space from after it in a new query (startingPosition)"


# -- msgpack values as JSON --------------------------------------------------------------------------------------
def to_json_value(value: Any) -> Any:
    """A decoded msgpack value (a ``_space`` or ``_index`` tuple) as JSON: maps with non-string keys, binary and
    non-finite floats are tagged (``{"$m": pairs}``, ``{"$b": base64}``, ``{"$f": text}``); an extension value
    (decimal, uuid, datetime in a field's default) is kept as its text (``{"$s": text}``)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: to_json_value(v) for k, v in value.items()}
        return {"$m": [[to_json_value(k), to_json_value(v)] for k, v in value.items()]}
    return {"$s": str(value)}


def from_json_value(value: Any) -> Any:
    """The inverse of :func:`to_json_value` (extension values come back as their text)."""
    if isinstance(value, list):
        return [from_json_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, inner), = value.items()
        if tag == "$m":
            return {_hashable(from_json_value(k)): from_json_value(v) for k, v in inner}
        if tag == "$b":
            return base64.b64decode(inner)
        if tag == "$f":
            return float(inner)
        if tag == "$s":
            return inner
    return {k: from_json_value(v) for k, v in value.items()}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# -- the space at an offset --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpaceState:
    """The space at an offset: its ``_space`` tuple (None: not defined there) and ``_index`` tuples, and the vclock
    a snapshot the stream started from holds (``covered``: rows at or below it are in the snapshot)."""

    space: list[Any] | None
    indexes: tuple[list[Any], ...] = ()
    covered: dict[int, int] = field(default_factory=dict)

    def definition(self) -> SpaceDef | None:
        return None if self.space is None else space_def(self.space, self.indexes)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"tuple": to_json_value(self.space), "indexes": to_json_value(list(self.indexes))}
        if self.covered:
            doc["covered"] = {str(r): lsn for r, lsn in sorted(self.covered.items())}
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> SpaceState:
        try:
            space = from_json_value(doc["tuple"])
            indexes = tuple(from_json_value(doc.get("indexes") or []))
            covered = {int(r): int(lsn) for r, lsn in (doc.get("covered") or {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OptionError("offset", f"the space state in the offset is not one this reader writes: {exc}"
                              ) from None
        if space is not None and not isinstance(space, list):
            raise OptionError("offset", "the space state in the offset is not one this reader writes: no tuple")
        return cls(space, indexes, covered)

    def version(self) -> Version:
        return Version(SEED, 0, self.definition())


def _apply_catalog_row(builder: CatalogBuilder, row: LogRow, common: CommonOptions, what: str) -> int | None:
    """Apply a row of ``_space``/``_index`` to ``builder``; the space id it touches (None: a bad row, skipped)."""
    if row.error is not None:
        if common.mode is ParseMode.FAILFAST:
            raise row.error
        log.warning("%s: skipping a bad region (a space definition may be missing): %s", what, row.error)
        return None
    try:
        return builder.apply(row)
    except ReplayError as exc:
        err = CorruptDataError(row.path, row.offset, f"lsn {row.lsn}: cannot apply to the catalog: {exc}")
        if common.mode is ParseMode.FAILFAST:
            raise err from None
        log.warning("%s", err)
        return None


def catalog_state(files: Sequence[FileEntry], common: CommonOptions, space_id: int,
                  stop: tuple[int, int, int]) -> SpaceState:
    """The space's tuples in ``_space``/``_index`` after every row of ``files`` before ``stop`` = ``(signature,
    kind, byte)`` (kind 0 a snapshot, 1 an xlog; the order of ``catalog.build_catalog``)."""
    builder = CatalogBuilder()
    ordered = sorted((f for f in files if file_key(f.uri)[1] in (0, 1) and base_name(f.uri).endswith(
        (".snap", ".xlog"))), key=lambda f: (file_key(f.uri), f.uri))
    for entry in ordered:
        key = file_key(entry.uri)
        if key > stop[:2]:
            break
        if key[1] == 0:
            builder.spaces.clear()
            builder.indexes.clear()
        end = stop[2] if key == stop[:2] else None
        for row in iter_rows(entry.uri, CATALOG_SPACES, common, end=end):
            _apply_catalog_row(builder, row, common, "the space at the stream's start")
    space = builder.spaces.rows.get((space_id,))
    indexes = tuple(t for k, t in sorted(builder.indexes.rows.items(), key=lambda kv: str(kv[0])) if k[0] == space_id)
    return SpaceState(copy.deepcopy(space), copy.deepcopy(indexes))


@dataclass(frozen=True, slots=True)
class _Stop:
    row: LogRow
    reason: str
    hint: str | None = None


@dataclass(slots=True)
class _Replay:
    versions: list[Version]
    state: SpaceState
    stop: _Stop | None


class SpaceFollower:
    """The driver's side of a ``view=space`` stream (see the module docstring)."""

    def __init__(self, view: SpaceView, source: str, describe: Callable[[Mapping[str, Any]], str]) -> None:
        self.view = view
        self.space_id = view.space_id
        self.source = source
        self.describe = describe  # an offset in words

    # -- states in offsets ------------------------------------------------------------------------------------
    @staticmethod
    def state_in(offset: Mapping[str, Any]) -> SpaceState | None:
        doc = offset.get(SPACE_KEY)
        return None if doc is None else SpaceState.from_json(doc)

    @staticmethod
    def with_state(offset: Mapping[str, Any], state: SpaceState) -> Offset:
        out = {k: v for k, v in offset.items() if k != SPACE_KEY}
        out[SPACE_KEY] = state.to_json()
        return out

    def fits(self, space: SpaceDef) -> str | None:
        """Why the view's schema cannot name ``space``'s fields (None: it can)."""
        for f in space.fields:
            name = column_name(f.name, self.view.reserved)
            known = self.view.columns.get(name)
            if known is None:
                return f"field {f.name!r} ({f.type}) is not in the query's schema"
            wanted = arrow_type(f.type)
            if str(known) != str(wanted) and str(known) != VARIANT:
                return f"field {f.name!r} is now {f.type}, which the query's column {name!r} ({known}) cannot hold"
        return None

    def check_start(self, start: Mapping[str, Any]) -> SpaceState:
        """The state at ``start``, refused when the query's schema cannot name it (a restart whose directory lost
        the files of a format the checkpoint needs)."""
        state = self.state_in(start)
        if state is None:
            raise OptionError("offset", f"the offset names no state of space {self.space_id} (an offset of the "
                                        "rows view given to view=space?)")
        space = state.definition()
        if space is not None:
            why = self.fits(space)
            if why is not None:
                raise SchemaChangeError(self.source, self.describe(start), "(the checkpoint's format)",
                                        f"space {space.name!r}: {why}", "start a new query (new checkpoint)")
        return state

    # -- the DDL of a range -----------------------------------------------------------------------------------
    def replay(self, state: SpaceState, rows: Sequence[LogRow]) -> _Replay:
        """Apply the catalog ``rows`` (in log order) to the space at ``state``, up to the first that stops."""
        builder = CatalogBuilder()
        if state.space is not None:
            builder.spaces.replace(copy.deepcopy(state.space))
        for t in state.indexes:
            builder.indexes.replace(copy.deepcopy(t))
        current = state.definition()
        versions: list[Version] = []
        now = state
        for row in rows:
            target = row.tuple if isinstance(row.tuple, list) else row.key
            if row.error is None and not (isinstance(target, list) and target and target[0] == self.space_id):
                continue
            if row.error is not None:
                if self.view.fmt.common.mode is ParseMode.FAILFAST:
                    raise row.error
                log.warning("%s: a bad region among the space definitions (skipped): %s", self.source, row.error)
                continue
            try:
                builder.apply(row)
            except ReplayError as exc:
                return _Replay(versions, now, _Stop(row, f"the change of space {self.space_id}'s definition "
                                                         f"cannot be replayed ({exc})", _NO_RESTART))
            space = builder.current(self.space_id)
            if space == current:
                continue
            if space is None:
                name = current.name if current is not None else str(self.space_id)
                return _Replay(versions, now, _Stop(row, f"the space {name!r} was dropped",
                                                    "a stream of this space ends here"))
            why = self.fits(space)
            if why is not None:
                return _Replay(versions, now, _Stop(row, f"space {space.name!r}: {why}", _RESTART))
            if current is not None and space.name != current.name:
                log.info("%s: space %r is now named %r (lsn %s): followed", self.source, current.name, space.name,
                         row.lsn)
            versions.append(Version(row.position, row.lsn or 0, space))
            current = space
            raw = builder.spaces.rows.get((self.space_id,))
            indexes = tuple(t for k, t in sorted(builder.indexes.rows.items(), key=lambda kv: str(kv[0]))
                            if k[0] == self.space_id)
            now = SpaceState(copy.deepcopy(raw), copy.deepcopy(indexes), state.covered)
        return _Replay(versions, now, None)

    def latest(self, start: Offset, end: Offset, state: SpaceState, rows: Sequence[LogRow], *,
               at_start: Callable[[LogRow], bool], boundary: Callable[[LogRow], Offset],
               where: Callable[[LogRow], str]) -> Offset:
        """``end`` with the space's state there, or the boundary before the first of the catalog ``rows`` of
        ``[start, end)`` that stops the stream; raises :class:`SchemaChangeError` when that row is at ``start``
        itself (``at_start``: nothing before it in the range). ``where`` names a row's place for messages."""
        replay = self.replay(state, rows)
        if replay.stop is None:
            return self.with_state(end, replay.state)
        row = replay.stop.row
        if at_start(row):
            what = "_space" if row.space_id == SPACE_SPACE else "_index"
            body = row.tuple if row.type in ("INSERT", "REPLACE") else (
                {"key": row.key, "ops": row.ops} if row.ops is not None else {"key": row.key})
            raise SchemaChangeError(self.source, where(row), f"{row.type} of {what}: {body!r}", replay.stop.reason,
                                    *(() if replay.stop.hint is None else (replay.stop.hint,)))
        log.info("%s: the range ends before %s, a change of the space's definition (%s)", self.source, where(row),
                 replay.stop.reason)
        return self.with_state(boundary(row), replay.state)

    def versions(self, state: SpaceState, rows: Sequence[LogRow]) -> tuple[Version, ...]:
        """The space's versions over a planned range (no row in it stops the stream) whose catalog rows are
        ``rows``, from ``state`` at its start."""
        return (state.version(), *self.replay(state, rows).versions)
