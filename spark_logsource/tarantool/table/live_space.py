"""``view=space`` on the live source (``tarantool-replication``): one space's typed changes from a server.

``docs/formats/tarantool-typed.md`` "Streaming" states the rules; ``table/follow.py`` the definition carried in the
offsets.  What differs from the directory tail:

- the schema is fixed from the server's ``_space``/``_index`` rows now (a SELECT on the reader's own connection;
  the ``replication`` role may read them);
- a new query's state is the server's definition now; a start before a change of the space's definition is
  refused (the definition there is not known), unless the change is the space's creation;
- the driver finds the ``_space``/``_index`` rows of a range by reading the range itself (the replication stream
  cannot be filtered on the server), so each range crosses the network twice;
- ``seq`` is the sum over origins of the last LSN seen, from the range's start offset (whose components are
  transaction ids): with one writer it is the row's LSN; rows of local spaces never reach a replica;
- the range before a change of the definition ends before the change's transaction: per origin, the last
  transaction id wholly before it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.streaming.stream import Offset, ReadBudget, offset_json
from spark_logsource.tarantool.position import vclock_text
from spark_logsource.tarantool.read.logrows import LogRow, unpack
from spark_logsource.tarantool.stream.client import IprotoConnection
from spark_logsource.tarantool.stream.live import LiveSlice, LiveStream, VClock, make_offset, parse_offset
from spark_logsource.tarantool.table.catalog import (
    INDEX_SPACE,
    SPACE_SPACE,
    TRUNCATE_SPACE,
    SpaceHistory,
    Version,
)
from spark_logsource.tarantool.table.follow import SEED, SpaceFollower, SpaceState
from spark_logsource.tarantool.table.space_view import SpaceView

if TYPE_CHECKING:
    from spark_logsource.tarantool.replication_format import TarantoolReplicationFormat

__all__ = ["LiveSpaceSlice", "LiveSpaceStream", "server_space"]

log = logging.getLogger(__name__)

_INDEX_BY_NAME = 2  # _space's unique index on the name
#: Tries to read the space's definition between two equal answers (a DDL in between makes them differ).
_STABLE_TRIES = 5


def server_space(conn: IprotoConnection, space: str) -> SpaceState:
    """The space's ``_space`` tuple and ``_index`` tuples on the server now (by name or id)."""
    text = space.strip()
    found = conn.select(SPACE_SPACE, [int(text)]) if text.isdigit() else conn.select(
        SPACE_SPACE, [text], index=_INDEX_BY_NAME)
    if not found or not isinstance(found[0], list):
        raise OptionError("space", f"the server {conn.source} has no space {space!r}; spaces found: "
                                   f"{_space_names(conn)}")
    indexes = conn.select(INDEX_SPACE, [found[0][0]])
    return SpaceState(found[0], tuple(t for t in indexes if isinstance(t, list)))


def _space_names(conn: IprotoConnection, limit: int = 50) -> str:
    """The names in the server's ``_space``, the user's spaces first (the system ones start with ``_``)."""
    names = sorted(str(t[2]) for t in conn.select(SPACE_SPACE, []) if isinstance(t, list) and len(t) > 2)
    names.sort(key=lambda n: n.startswith("_"))
    return ", ".join(names[:limit]) + (", …" if len(names) > limit else "") if names else "none"


def server_history(conn: IprotoConnection, space: str) -> tuple[SpaceHistory, SpaceState]:
    state = server_space(conn, space)
    definition = state.definition()
    if definition is None:
        raise OptionError("space", f"the server's _space row of {space!r} is not one this reader understands")
    return SpaceHistory(definition.id, [Version(SEED, 0, definition)]), state


@dataclass(frozen=True, slots=True)
class LiveSpaceSlice:
    """A range of the live stream and the space's versions over it."""

    inner: LiveSlice
    versions: tuple[Version, ...]

    def __repr__(self) -> str:
        return f"LiveSpaceSlice({self.inner.describe()}, {len(self.versions)} versions)"


@dataclass(frozen=True, slots=True)
class _Seen:
    """A row of the stream with its ``seq`` and, per origin, the last transaction id wholly before it."""

    row: LogRow
    seq: int
    before: tuple[tuple[int, int], ...]


def _describe(offset: Mapping[str, Any]) -> str:
    return f"vclock {vclock_text(parse_offset(dict(offset)).vclock)}"


def _plain(offset: Mapping[str, Any]) -> Offset:
    position = parse_offset(dict(offset))
    return make_offset(position.replicaset, position.vclock)


class LiveSpaceStream(LiveStream):
    """The live source's ``view=space`` stream (see the module docstring)."""

    fmt: TarantoolReplicationFormat

    def __init__(self, fmt: TarantoolReplicationFormat) -> None:
        super().__init__(fmt)
        self.view: SpaceView = fmt.space_view()
        assert fmt.space_option is not None  # view=space requires it
        self.space = fmt.space_option
        self.follower = SpaceFollower(self.view, fmt.endpoint.display, _describe)

    def schema(self) -> pa.Schema:
        return self.view.schema()

    # --- driver -------------------------------------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        if self.fmt.starting_position == "snapshot":
            raise OptionError("startingPosition", "view=space on tarantool-replication starts at latest, earliest "
                                                  "or a vclock; startingPosition=snapshot is for the directory tail "
                                                  "(tarantool-xlog) or the rows view")
        plain = super().initial_offset()
        return self.follower.with_state(plain, self._state_at(plain))

    def _stable_state(self) -> tuple[VClock, SpaceState]:
        """The server's vclock and the space's definition at that vclock (read until two reads agree)."""

        def read() -> tuple[VClock, SpaceState]:
            with self._connect() as conn:
                for _ in range(_STABLE_TRIES):
                    before = server_space(conn, self.space)
                    vclock = conn.vote().vclock
                    after = server_space(conn, self.space)
                    if before == after:
                        return {r: v for r, v in vclock.items() if r != 0}, after
            raise OptionError("space", f"the definition of {self.space!r} keeps changing; try again")

        return self.fmt.reconnect.call(read, "reading the space's definition")

    def _state_at(self, plain: Offset) -> SpaceState:
        """The space's state at a new query's start: the server's now, unless its definition changed since."""
        start = parse_offset(plain)
        vclock, now = self._stable_state()
        if all(v <= start.vclock.get(r, 0) for r, v in vclock.items()):
            return now
        changes = [s.row for s in self._seen(plain, make_offset(start.replicaset, vclock))
                   if self._touches(s.row) and s.row.space_id in (SPACE_SPACE, INDEX_SPACE)]
        if not changes:
            return now
        first = changes[0]
        if first.space_id == SPACE_SPACE and first.type in ("INSERT", "REPLACE"):
            return SpaceState(None)  # created after the start: followed from its creation
        raise OptionError("startingPosition", f"the definition of space {self.space!r} changed after "
                                              f"{_describe(plain)} (lsn {first.lsn} of replica {first.replica_id}): "
                                              "its format there is not known; start at latest or after the change")

    def latest_offset(self, start: Offset, budget: ReadBudget) -> Offset:
        state = self.follower.check_start(start)
        plain = _plain(start)
        end = super().latest_offset(plain, budget)
        if offset_json(end) == offset_json(plain):
            return start
        seen = [s for s in self._seen(plain, end) if s.row.space_id in (SPACE_SPACE, INDEX_SPACE)]
        before = {id(s.row): s.before for s in seen}
        first = parse_offset(plain)

        def boundary(row: LogRow) -> Offset:
            return make_offset(first.replicaset, dict(before[id(row)]))

        def at_start(row: LogRow) -> bool:
            return offset_json(boundary(row)) == offset_json(plain)

        def where(row: LogRow) -> str:
            return f"lsn {row.lsn} of replica {row.replica_id} (the stream is at {_describe(plain)})"

        return self.follower.latest(start, end, state, [s.row for s in seen], at_start=at_start, boundary=boundary,
                                    where=where)

    def plan(self, start: Offset, end: Offset) -> Sequence[Any]:
        inner = super().plan(_plain(start), _plain(end))
        if not inner:
            return []
        state = self.follower.check_start(start)
        rows = [s.row for s in self._seen(_plain(start), _plain(end)) if s.row.space_id in (SPACE_SPACE, INDEX_SPACE)]
        versions = self.follower.versions(state, rows)
        return [LiveSpaceSlice(s, versions) for s in inner]

    def _seen(self, start: Offset, end: Offset) -> list[_Seen]:
        """The rows of the range read on the driver: those of the catalog, the space and ``_truncate``.

        ``plan`` asks for the range ``latest_offset`` just read (unless a format change cut it): the log does not
        change below a vclock already read, so that read is answered again from memory, not from the server.
        """
        key = (offset_json(start), offset_json(end))
        cached = getattr(self, "_seen_range", None)
        if cached is not None and cached[0] == key:
            return list(cached[1])
        slices = super().plan(start, end)
        out: list[_Seen] = []
        for s in slices:
            out.extend(self._rows(super().read_slice(s), s, (SPACE_SPACE, INDEX_SPACE)))
        self._seen_range: tuple[tuple[str, str], list[_Seen]] | None = (key, out)
        return list(out)

    def __getstate__(self) -> dict[str, Any]:
        # executors get a pickled copy: the driver's last read of a range stays on the driver
        return {k: v for k, v in self.__dict__.items() if k != "_seen_range"}

    def _touches(self, row: LogRow) -> bool:
        target = row.tuple if isinstance(row.tuple, list) else row.key
        return isinstance(target, list) and bool(target) and target[0] == self.view.space_id

    def _rows(self, batches: Iterable[pa.RecordBatch], slice_: LiveSlice, spaces: Sequence[int]) -> Iterator[_Seen]:
        """The rows of ``spaces`` (and bad rows) of a range's plain batches, each with its ``seq`` and the
        boundary before its transaction (see the module docstring)."""
        source = self.fmt.endpoint.display
        running: dict[int, int] = dict(slice_.start_vclock)
        done: dict[int, int] = dict(slice_.start_vclock)
        tx: tuple[int, int] | None = None
        corrupt = self.fmt.common.corrupt_column
        wanted = set(spaces)
        n = 0
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in (
                "lsn", "replica_id", "tsn", "type", "space_id", "index_id", "key", "tuple", "ops", "extra")}
            cols["timestamp"] = batch.column("timestamp").cast(pa.int64()).to_pylist()
            errors = batch.column(corrupt).to_pylist() if corrupt in batch.schema.names else [None] * len(batch)
            for i in range(len(batch)):
                n += 1
                if errors[i] is not None:
                    yield _Seen(LogRow(source, (sum(running.values()), 1, n, 0),
                                       error=CorruptDataError(source, None, str(errors[i]))),
                                sum(running.values()), tuple(sorted(done.items())))
                    continue
                origin, lsn, tsn = cols["replica_id"][i] or 0, cols["lsn"][i] or 0, cols["tsn"][i] or 0
                if tx is not None and tx != (origin, tsn):
                    done[tx[0]] = max(done.get(tx[0], 0), tx[1])
                tx = (origin, tsn)
                running[origin] = max(running.get(origin, 0), lsn)
                seq = sum(running.values())
                space = cols["space_id"][i]
                if space not in wanted:
                    continue
                extra = unpack(cols["extra"][i]) if cols["extra"][i] is not None else None
                base = extra.get("index_base", 0) if isinstance(extra, dict) else 0
                row = LogRow(source, (seq, 1, 0, 0), lsn, origin, tsn, cols["timestamp"][i], cols["type"][i], space,
                             cols["index_id"][i], unpack(cols["key"][i]), unpack(cols["tuple"][i]),
                             unpack(cols["ops"][i]), base if isinstance(base, int) else 0)
                yield _Seen(row, seq, tuple(sorted(done.items())))

    # --- executors ----------------------------------------------------------------------------------------------
    def read_slice(self, slice_: Any) -> Iterator[pa.RecordBatch]:
        if not isinstance(slice_, LiveSpaceSlice):
            raise TypeError(f"not a LiveSpaceSlice: {type(slice_).__name__}")
        history = SpaceHistory(self.view.space_id, list(slice_.versions))
        rows = ((s.row, s.seq) for s in self._rows(super().read_slice(slice_.inner), slice_.inner,
                                                   (self.view.space_id, TRUNCATE_SPACE)))
        yield from self.view.typed_batches(rows, history)
