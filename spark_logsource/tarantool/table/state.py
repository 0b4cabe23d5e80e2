"""``view=state``: a space's content as of an LSN, rebuilt from the last snapshot and the xlogs after it.

The replay (``replay.py``) runs inside the tasks, partitioned by primary key: the plan has ``statePartitions``
splits, and split ``i`` of ``n`` reads the snapshot and every later xlog row of the space but keeps only the
tuples whose primary key hashes to ``i`` (``replay.key_hash``, the same in every process).  So no tuple crosses
the driver and the work is spread; the price is that each task reads the space's rows (the other spaces' rows
are skipped undecoded).  A DELETE or UPDATE through a secondary unique index is applied by the task that holds
the tuple.  The Arrow API runs the same splits one after another in the calling process.

Rows considered: the snapshot whose vclock is at or below ``asOfLsn`` (the latest one without it), then every
xlog row with an LSN above that snapshot's vclock component for its replica and at most ``asOfLsn``.  Besides the
space's own rows, ``_index`` (a dropped primary index empties the space) and ``_truncate`` (truncate empties it)
are followed.  ``asOfLsn`` counts the LSNs of the instance that wrote the WAL directory (one writer).

Columns: the fields of the format in force at ``asOfLsn``, ``extra_fields`` (variant) and the corrupt-record
column in PERMISSIVE mode.  A change that cannot be applied (an operation Tarantool would have refused: the log
disagrees with the replay) and a bad region of a file are corrupt-record rows; a bad region is reported by the
first split only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.arrow.jsontext import to_json
from spark_logsource.errors import CorruptDataError, OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import base_name
from spark_logsource.logformat import Split
from spark_logsource.tarantool.read.logrows import LogRow, file_key, iter_rows, read_vclock
from spark_logsource.tarantool.table.catalog import INDEX_SPACE, TRUNCATE_SPACE, SpaceDef
from spark_logsource.tarantool.table.replay import ReplayError, TupleStore, key_hash
from spark_logsource.tarantool.table.space_view import TypedView, _Rows
from spark_logsource.tarantool.table.typed import FieldTypeError, row_fields, row_plan, view_schema

if TYPE_CHECKING:
    from spark_logsource.io.fs import FileEntry
    from spark_logsource.tarantool.format import TarantoolXlogFormat

__all__ = ["StateView"]

log = logging.getLogger(__name__)

DEFAULT_PARTITIONS = 4
_STATE_URI = "tarantool-state:"


class StateView(TypedView):
    """The ``view=state`` part of a :class:`TarantoolXlogFormat`."""

    def __init__(self, fmt: TarantoolXlogFormat, space: str, as_of_lsn: int | None, partitions: int) -> None:
        super().__init__(fmt, space)
        self.as_of_lsn = as_of_lsn
        self.partitions = partitions
        final = self.history.as_of_lsn(as_of_lsn)
        if final is None:
            raise OptionError("asOfLsn", f"space {space!r} does not exist as of LSN {as_of_lsn}")
        if final.primary_key is None:
            raise OptionError("space", f"space {space!r} has no primary index on plain fields as of LSN "
                                       f"{as_of_lsn}: its state cannot be rebuilt")
        self.final: SpaceDef = final
        self.reserved = ("extra_fields", fmt.common.corrupt_column)
        self.columns, self._schema = view_schema([final], self.reserved, tail=("extra_fields",),
                                                 corrupt_column=fmt.common.corrupt_column_or_none)

    # --- planning (driver) --------------------------------------------------------------------------------------
    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate]) -> list[Split]:
        logs = sorted((f for f in files if base_name(f.uri).endswith((".snap", ".xlog"))),
                      key=lambda f: (file_key(f.uri), f.uri))
        snap, snap_vclock = None, {}
        for f in logs:
            if file_key(f.uri)[1] != 0:
                continue
            try:
                vclock = read_vclock(f.uri)
            except (CorruptDataError, OSError) as exc:
                log.warning("not using snapshot %s: %s", f.uri, exc)
                continue
            if self.as_of_lsn is None or max((v for r, v in vclock.items() if r != 0), default=0) <= self.as_of_lsn:
                snap, snap_vclock = f, vclock
        xlogs = [f for f in logs if file_key(f.uri)[1] == 1]
        if snap is not None:
            sig = file_key(snap.uri)[0]
            first = max([i for i, f in enumerate(xlogs) if file_key(f.uri)[0] <= sig], default=0)
            xlogs = xlogs[first:]
        elif xlogs and file_key(xlogs[0].uri)[0] != 0:
            log.warning("no snapshot and the first xlog does not start the log: the state lacks older rows")
        parts = self.partitions
        pks = {v.primary_key for v in self.history.defined()} - {None}
        if len(pks) > 1 and parts > 1:
            log.info("the primary key of space %d changed in the log: replaying in one partition", self.space_id)
            parts = 1
        hints = (("snapshot", None if snap is None else snap.uri), ("snapshot_vclock", tuple(snap_vclock.items())),
                 ("xlogs", tuple(f.uri for f in xlogs)), ("parts", parts))
        return [Split(f"{_STATE_URI}{self.space_id}/{i}", 0, None, 0, (*hints, ("part", i))) for i in range(parts)]

    # --- replay (tasks) -----------------------------------------------------------------------------------------
    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        part: int = split.hint("part", 0)
        parts: int = split.hint("parts", 1)
        out = _Rows(self._schema, self.columns)
        corrupt = self.fmt.common.corrupt_column
        size = self.fmt.common.batch_size

        def keep_key(key: tuple[Any, ...]) -> bool:
            return key_hash(key) % parts == part

        def bad(error: CorruptDataError) -> None:
            self.fmt.common.mode.handle(error, lambda e: out.add({corrupt: str(e)}))

        store = TupleStore(self.final.primary_key or (), keep_key if parts > 1 else None)
        snapshot = split.hint("snapshot")
        vclock = dict(split.hint("snapshot_vclock", ()))
        if snapshot is not None:
            for row in iter_rows(snapshot, (self.space_id,), self.fmt.common):
                if row.error is not None:
                    if part == 0:
                        bad(row.error)
                    continue
                self._apply(store, row, bad)
        for uri in split.hint("xlogs", ()):
            for row in iter_rows(uri, (self.space_id, INDEX_SPACE, TRUNCATE_SPACE), self.fmt.common):
                if row.error is not None:
                    if part == 0:
                        bad(row.error)
                    continue
                lsn = row.lsn or 0
                if lsn <= vclock.get(row.replica_id or 0, 0) or (self.as_of_lsn is not None and lsn > self.as_of_lsn):
                    continue
                self._apply(store, row, bad)
            while out.n >= size:
                yield out.batch()
        plan = row_plan(self.final, self.columns, self.reserved)
        for tup in store:
            try:
                fields, extra = row_fields(tup, self.final, self.columns, self.reserved, plan)
            except FieldTypeError as exc:
                bad(CorruptDataError(f"space {self.final.name!r}", None, f"tuple {to_json(tup)}: {exc}"))
                continue
            fields["extra_fields"] = extra
            out.add(fields)
            if out.n >= size:
                yield out.batch()
        if out.n:
            yield out.batch()

    def _apply(self, store: TupleStore, row: LogRow, bad: Any) -> None:
        if row.space_id == TRUNCATE_SPACE:
            target = row.tuple if isinstance(row.tuple, list) else row.key
            if isinstance(target, list) and target and target[0] == self.space_id:
                store.clear()
            return
        if row.space_id == INDEX_SPACE:
            if row.type == "DELETE" and isinstance(row.key, list) and row.key[:2] == [self.space_id, 0]:
                store.clear()
            return
        space = self.history.at(row.position) or self.final
        pk = space.primary_key
        if pk is not None and pk != store.pk_parts:
            tuples = list(store.rows.values())
            store.pk_parts = pk
            store.clear()
            for tup in tuples:
                try:
                    store.replace(tup)
                except ReplayError:
                    continue
        index_parts = space.index_parts(row.index_id) if row.index_id else None
        if row.index_id and index_parts is None:
            bad(CorruptDataError(row.path, row.offset, f"lsn {row.lsn}: {row.type} names index {row.index_id}, "
                                                       "whose parts the catalog does not know"))
            return
        try:
            store.apply(row.type or "", key=row.key, tup=row.tuple, ops=row.ops, index_base=row.index_base,
                        names=space.names, index_parts=index_parts)
        except ReplayError as exc:
            bad(CorruptDataError(row.path, row.offset, f"lsn {row.lsn}: {row.type} cannot be replayed: {exc}"))
