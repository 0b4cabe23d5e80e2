"""The ``tarantool-xlog`` format: options, file selection, LSN-range file pruning, and split reading.

Options (case-insensitive, Spark's conventions; ``docs/formats/tarantool-xlog.md``):
``tupleFormat`` variant|json|msgpack; streaming (``readStream``, ``follow``): ``startingPosition``,
``failOnDataLoss``, ``maxRowsPerTrigger``, ``maxBytesPerTrigger``, ``maxFilesPerTrigger`` (``docs/streaming.md``);
``includeInProgress`` (``*.inprogress`` files when listing a directory);
``spaceId``, ``replicaId``, ``types`` (comma lists; type names or codes), ``fromLsn`` (inclusive), ``toLsn``
(exclusive) — the filters of ``tt cat``; ``view`` rows|space|state with ``space``, ``asOfLsn``,
``statePartitions`` (typed views of one space, ``docs/formats/tarantool-typed.md``); plus the common ones
(``mode``, ``columnNameOfCorruptRecord``, ``batchSize``, ``verifyChecksums``, ``maxPartitionBytes``,
``pathGlobFilter``, ``recursiveFileLookup``).

File pruning: an xlog named in a directory holds, for each replica ``r``, the LSNs ``(V[r], V'[r]]`` where ``V``
is its own ``VClock:`` header and ``V'`` the header of the next xlog of the same instance, when that next file's
``PrevVClock:`` says it directly follows (Tarantool writes the vclock at rotation; see ``src/box/wal.c``).
Files whose ranges cannot meet the requested LSN range are not read at all. Snapshots are never pruned by LSN:
their rows carry a counter, not the instance's LSNs.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import LogSourceError, OptionError
from spark_logsource.filters import Predicate, allowed_values, filter_batches, in_filter, range_filter, value_range
from spark_logsource.io.fs import FileEntry, display_name, open_input
from spark_logsource.logformat import CliFlag, LogFormat, Split
from spark_logsource.options import OptionMap
from spark_logsource.streaming.stream import LogStream
from spark_logsource.tarantool.decode.names import REQUEST_TYPES
from spark_logsource.tarantool.read.reader import XlogMeta, XlogReadOptions, iter_file_batches, read_meta, xlog_schema
from spark_logsource.tarantool.stream.tail import TarantoolDirStream, parse_stream_options

if TYPE_CHECKING:
    from spark_logsource.tarantool.table.space_view import SpaceView
    from spark_logsource.tarantool.table.state import StateView

log = logging.getLogger(__name__)

TUPLE_FORMATS = ("variant", "json", "msgpack")
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
_LISTED_SUFFIXES = (".xlog", ".snap", ".vylog")
_TYPE_BY_NAME = {name.lower(): name for name in REQUEST_TYPES.values()}
_CAT_AND_FOLLOW = frozenset({"cat", "follow"})
#: First bytes of the files Tarantool writes: the file-type line of the text header (docs/formats/tarantool-xlog.md).
FILE_MAGICS = (b"XLOG\n", b"SNAP\n", b"VYLOG", b"RUN\n", b"INDEX")


def canonical_type(text: str) -> str:
    """The ``type`` column's spelling of a request type given by name (any case) or code."""
    t = text.strip()
    if t.isdigit():
        return REQUEST_TYPES.get(int(t), str(int(t)))
    name = _TYPE_BY_NAME.get(t.lower())
    if name is None:
        raise OptionError(
            "types",
            f"unknown request type {text!r}; use a name ({', '.join(_TYPE_BY_NAME.values())}) or a numeric code",
        )
    return name


def row_filters(opts: OptionMap) -> list[Predicate]:
    """``spaceId``, ``replicaId`` and ``types`` (the row filters of ``tt cat``), for files and the live replica."""
    preds = in_filter("space_id", opts.int_list("spaceId", minimum=0, maximum=INT32_MAX))
    preds += in_filter("replica_id", opts.int_list("replicaId", minimum=0, maximum=INT32_MAX))
    types = opts.str_list("types")
    return preds + in_filter("type", types and [canonical_type(t) for t in types])


class TarantoolXlogFormat(LogFormat):
    name = "tarantool-xlog"
    pushable_columns = frozenset(
        {"lsn", "replica_id", "space_id", "type", "tsn", "timestamp", "group_id", "index_id", "file_type", "is_commit"}
    )
    # Command line: the filters of ``tt cat``; text output with tuples as JSON (docs/formats/tarantool-xlog.md).
    cli_title = "tarantool-xlog (like tt cat)"
    cli_flags = (
        CliFlag("--space", "spaceId", "space id (repeatable)", int, repeatable=True, commands=_CAT_AND_FOLLOW),
        CliFlag("--replica", "replicaId", "replica id (repeatable)", int, repeatable=True, commands=_CAT_AND_FOLLOW),
        CliFlag("--types", "types", "request type name or code (repeatable)", repeatable=True,
                commands=_CAT_AND_FOLLOW),
        CliFlag("--from", "fromLsn", "first LSN (inclusive)", int, metavar="FROM_LSN"),
        CliFlag("--to", "toLsn", "last LSN (exclusive)", int, metavar="TO_LSN"),
    )
    text_options = MappingProxyType({"tupleFormat": "json"})
    json_text_columns = frozenset({"key", "tuple", "ops", "extra"})

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        """A ``.xlog``/``.snap``/``.vylog`` name, or the file-type line every Tarantool file starts with."""
        return name.endswith((*_LISTED_SUFFIXES, ".inprogress")) or head.startswith(FILE_MAGICS)

    def _parse_options(self, opts: OptionMap) -> None:
        self.tuple_format = opts.choice("tupleFormat", TUPLE_FORMATS, "variant")
        self.include_in_progress = opts.boolean("includeInProgress", False)
        preds = row_filters(opts)
        preds += range_filter("lsn", opts.integer("fromLsn", minimum=0, maximum=INT64_MAX),
                              opts.integer("toLsn", minimum=0, maximum=INT64_MAX))
        self.option_predicates = tuple(preds)
        self.read_options = XlogReadOptions(tuple_format=self.tuple_format, common=self.common)
        self.stream_options = parse_stream_options(opts)
        self.typed_view = _typed_view_options(opts)  # view=space|state: built on first use (reads the catalog)
        self._typed: SpaceView | StateView | None = None

    def schema(self) -> pa.Schema:
        if self.typed_view is not None:
            return self.typed().schema()
        return xlog_schema(self.tuple_format, self.common.corrupt_column_or_none)

    def typed(self) -> SpaceView | StateView:
        """The ``view=space`` / ``view=state`` reader (``space_view.py``, ``state.py``), built once, on the driver."""
        if self._typed is None:
            from spark_logsource.tarantool.table.views import make_typed_view

            assert self.typed_view is not None  # asked for by the methods a view= read reaches
            self._typed = make_typed_view(self, self.typed_view)
        return self._typed

    def can_push(self, predicate: Predicate) -> bool:
        if self.typed_view is not None:
            return bool(self.typed().can_push(predicate))
        return super().can_push(predicate)

    def stream(self) -> LogStream:
        """``readStream`` / :func:`~spark_logsource.api.follow`: tail the WAL directory (``docs/streaming.md``)."""
        if self.typed_view is not None:
            raise OptionError("view", f"view={self.typed_view['view']} is available in batch reads only for now "
                                      "(spark.read, spark_logsource.read, spark-logsource cat); a stream reads "
                                      "the rows view (no view option)")
        return TarantoolDirStream(self)

    def accept_file_name(self, name: str) -> bool:
        if name.endswith(".inprogress"):
            return self.include_in_progress and name[: -len(".inprogress")].endswith(_LISTED_SUFFIXES)
        return name.endswith(_LISTED_SUFFIXES)

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        if self.typed_view is not None:
            return self.typed().plan(files, predicates)
        everything = (*self.option_predicates, *predicates)
        keep = _prune_by_lsn(files, everything)
        return super().plan(keep, predicates)

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        if self.typed_view is not None:
            yield from self.typed().read_split(split, predicates)
            return
        # Spark's pushed predicates drop corrupt-record rows (their columns are null, as in Spark's own sources);
        # the option filters (tt cat's) keep them, so a damaged block is never hidden by a filter.
        with open_input(split.uri) as source:
            yield from filter_batches(
                iter_file_batches(source, display_name(split.uri), start=split.start, end=split.end,
                                  options=self.read_options, predicates=predicates),
                self.option_predicates, self.common.corrupt_column_or_none)


def _typed_view_options(opts: OptionMap) -> dict[str, Any] | None:
    """``view`` (rows|space|state), ``space``, ``asOfLsn``, ``statePartitions``; None for the plain rows view."""
    view = opts.choice("view", ("rows", "space", "state"), "rows")
    space = opts.string("space")
    as_of = opts.integer("asOfLsn", minimum=0, maximum=INT64_MAX)
    parts = opts.integer("statePartitions", None, minimum=1, maximum=4096)
    if view == "rows":
        for name, value in (("space", space), ("asOfLsn", as_of), ("statePartitions", parts)):
            if value is not None:
                raise OptionError(name, "applies to view=space and view=state only")
        return None
    if not space:
        raise OptionError("space", f"view={view} needs the option space (a space name or id)")
    for name, value in (("asOfLsn", as_of), ("statePartitions", parts)):
        if value is not None and view != "state":
            raise OptionError(name, "applies to view=state only")
    return {"view": view, "space": space, "as_of_lsn": as_of, "partitions": parts or 4}


@dataclass(frozen=True, slots=True)
class _XlogHead:
    entry: FileEntry
    meta: XlogMeta


def _prune_by_lsn(files: Sequence[FileEntry], predicates: Iterable[Predicate]) -> list[FileEntry]:
    """``files`` without the xlogs whose LSN ranges cannot satisfy ``predicates`` (order kept)."""
    predicates = list(predicates)
    low, low_inc, high, high_inc = value_range(predicates, "lsn")
    if low is None and high is None:
        return list(files)
    lo = None if low is None else (low if low_inc else low + 1)  # smallest wanted LSN
    hi = None if high is None else (high if high_inc else high - 1)  # largest wanted LSN
    replicas = allowed_values(predicates, "replica_id")
    heads = []
    for entry in files:
        if not _base_name(entry.uri).endswith((".xlog", ".xlog.inprogress")):
            continue
        try:
            with open_input(entry.uri) as source:
                meta = read_meta(source, display_name(entry.uri))
        except (LogSourceError, OSError) as exc:  # a broken header: read the file and let modes handle it
            log.info("not pruning %s: %s", display_name(entry.uri), exc)
            continue
        heads.append(_XlogHead(entry, meta))
    skip: set[str] = set()
    by_chain: dict[tuple[str, str | None], list[_XlogHead]] = {}
    for head in heads:
        by_chain.setdefault((posixpath.dirname(head.entry.uri), head.meta.instance_uuid), []).append(head)
    for chain in by_chain.values():
        chain.sort(key=lambda h: (sum(h.meta.vclock.values()), h.entry.uri))
        for i, head in enumerate(chain):
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            upper = nxt.meta.vclock if nxt is not None and _follows(head.meta, nxt.meta) else None
            if not _may_hold(head.meta.vclock, upper, lo, hi, replicas):
                skip.add(head.entry.uri)
    if skip:
        log.info("LSN range [%s, %s] skips %d of %d files", lo, hi, len(skip), len(files))
    return [f for f in files if f.uri not in skip]


def _follows(prev: XlogMeta, nxt: XlogMeta) -> bool:
    if nxt.prev_vclock is not None:
        return _same_vclock(nxt.prev_vclock, prev.vclock)
    return all(nxt.vclock.get(r, 0) >= v for r, v in prev.vclock.items())


def _same_vclock(a: dict[int, int], b: dict[int, int]) -> bool:
    keys = set(a) | set(b)
    return all(a.get(k, 0) == b.get(k, 0) for k in keys)


def _may_hold(
    start: dict[int, int], end: dict[int, int] | None, lo: int | None, hi: int | None, replicas: set[int] | None
) -> bool:
    """Whether a file spanning vclocks (start, end] may hold an LSN in [lo, hi] of one of ``replicas``."""
    if end is None:
        candidates = replicas if replicas is not None else None
        if candidates is None:
            return True  # a replica unknown to the header may have written LSNs from 1 on
        return any(hi is None or start.get(r, 0) < hi for r in candidates)
    candidates = set(replicas) if replicas is not None else set(start) | set(end)
    for r in candidates:
        # A component missing from a header is 0 (vclock_to_string omits zeros); local-space rows (group_id 1)
        # count in component 0 since 2.2 and are covered like any other replica's.
        first, last = start.get(r, 0) + 1, end.get(r, 0)
        if first > last:
            continue
        if (lo is None or last >= lo) and (hi is None or first <= hi):
            return True
    return False


def _base_name(uri: str) -> str:
    return posixpath.basename(uri.split("?", 1)[0])
