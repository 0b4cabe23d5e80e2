"""The ``yugabyte-wal`` format: options, tablet discovery, pruning, and per-tablet splits.

Options (case-insensitive, Spark's conventions): ``view`` operations|writes; ``valueFormat`` variant|json (how
``details``, ``doc_key`` and ``value`` are given); ``tableId``, ``tabletId`` (comma
lists); ``opTypes`` (comma list of operation type names or numbers, operations view); ``fromIndex`` (inclusive)
and ``toIndex`` (exclusive) on the Raft index; ``includeSuperseded`` (default false: entries replaced by a later
entry of a higher term are dropped); plus the common ones (``mode``, ``columnNameOfCorruptRecord``,
``batchSize``, ``verifyChecksums``, ``maxPartitionBytes``, ``pathGlobFilter``). Streaming (``tail.py``):
``startingPosition`` (earliest | latest | an offset's JSON), ``failOnDataLoss``, ``maxRowsPerTrigger``,
``maxBytesPerTrigger``, ``maxFilesPerTrigger``.

A directory is always searched recursively (``load(".../yb-data/tserver/wals/")`` reads every tablet below).
A tablet (the folder holding its ``wal-NNNNNNNNN`` segments) is read whole, in sequence order, by one task,
because whether an entry was superseded by Raft is known only from what follows it in the same tablet's log;
small tablets are packed together into splits of about ``maxPartitionBytes``. Tablets
are pruned by ``table_id`` / ``tablet_id`` (options and pushed predicates) from their folder names before any
file is opened; closed segments outside the wanted index range are skipped by their footer's index range.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate, allowed_values, filter_batches, in_filter, range_filter, value_range
from spark_logsource.io.fs import FileEntry, display_name, list_files, split_query
from spark_logsource.logformat import CliFlag, LogFormat, Split
from spark_logsource.options import OptionMap
from spark_logsource.yugabyte.messages import OP_TYPES
from spark_logsource.yugabyte.position import SEGMENT_NAME
from spark_logsource.yugabyte.reader import (
    VALUE_FORMATS,
    VIEWS,
    TabletRef,
    WalReadOptions,
    iter_tablet_batches,
    tablet_ids_from_path,
    wal_schema,
)
from spark_logsource.yugabyte.segment import ENCRYPTED_MAGIC, HEADER_MAGIC
from spark_logsource.yugabyte.tail import YugabyteWalStream, parse_stream_options

log = logging.getLogger(__name__)

INT64_MAX = (1 << 63) - 1
_OP_BY_NAME = {name.lower(): name for name in OP_TYPES.values()}
_CAT_AND_FOLLOW = frozenset({"cat", "follow"})


def canonical_op_type(text: str) -> str:
    """The ``op_type`` column's spelling of an operation type given by name (any case, ``_OP`` optional) or number."""
    t = text.strip()
    if t.isdigit():
        return OP_TYPES.get(int(t), str(int(t)))
    name = _OP_BY_NAME.get(t.lower()) or _OP_BY_NAME.get(t.lower() + "_op")
    if name is None:
        raise OptionError("opTypes", f"unknown operation type {text!r}; use a name ({', '.join(OP_TYPES.values())}) "
                                     "or a number")
    return name


@dataclass(frozen=True, slots=True)
class TabletGroup:
    """The tablets of one split (pickled into its task); its repr shows no URI query string (credentials)."""

    tablets: tuple[TabletRef, ...]

    def __repr__(self) -> str:
        first = self.tablets[0].segments[0][0] if self.tablets and self.tablets[0].segments else ""
        return f"TabletGroup({len(self.tablets)} tablets from {posixpath.dirname(display_name(first))!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled into every task: each segment's folder (and URI query) is sent once per tablet, not per file.
        compact = []
        for t in self.tablets:
            folder, query = _folder_of(t.segments[0][0]) if t.segments else ("", "")
            names = tuple((uri[len(folder) + 1:len(uri) - len(query)], size) for uri, size in t.segments)
            compact.append((t.table_id, t.tablet_id, folder, query, names))
        return _tablet_group, (tuple(compact),)


def _folder_of(uri: str) -> tuple[str, str]:
    base, query = split_query(uri)
    return posixpath.dirname(base), query


def _tablet_group(compact: tuple[Any, ...]) -> TabletGroup:
    return TabletGroup(tuple(
        TabletRef(table_id, tablet_id, tuple((f"{folder}/{name}{query}", size) for name, size in names))
        for table_id, tablet_id, folder, query, names in compact))


class YugabyteWalFormat(LogFormat):
    name = "yugabyte-wal"
    pushable_columns = frozenset({"table_id", "tablet_id", "term", "index", "op_type", "hybrid_time"})
    # Command line: tablets and Raft indexes to read; text output with details / doc_key / value as JSON.
    cli_title = "yugabyte-wal (Raft WAL segments)"
    cli_flags = (
        CliFlag("--table-id", "tableId", "table id, as in the wals/table-<id> folder (repeatable)", repeatable=True,
                commands=_CAT_AND_FOLLOW),
        CliFlag("--tablet-id", "tabletId", "tablet id, as in the tablet-<id> folder (repeatable)", repeatable=True,
                commands=_CAT_AND_FOLLOW),
        CliFlag("--op-type", "opTypes", "operation type name or number (repeatable)", repeatable=True,
                commands=_CAT_AND_FOLLOW),
        CliFlag("--from-index", "fromIndex", "first Raft index (inclusive)", int, commands=_CAT_AND_FOLLOW),
        CliFlag("--to-index", "toIndex", "last Raft index (exclusive)", int, commands=_CAT_AND_FOLLOW),
    )
    text_options = MappingProxyType({"valueFormat": "json"})
    json_text_columns = frozenset({"details", "doc_key", "value"})

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        """A ``wal-NNNNNNNNN`` segment name, or a segment's magic (docs/formats/yugabyte-wal.md)."""
        return SEGMENT_NAME.match(name) is not None or head.startswith((HEADER_MAGIC, ENCRYPTED_MAGIC))

    def _parse_options(self, opts: OptionMap) -> None:
        self.view = opts.choice("view", VIEWS, "operations")
        self.value_format = opts.choice("valueFormat", VALUE_FORMATS, "variant")
        self.include_superseded = opts.boolean("includeSuperseded", False)
        preds = in_filter("table_id", opts.str_list("tableId")) + in_filter("tablet_id", opts.str_list("tabletId"))
        op_types = opts.str_list("opTypes")
        if op_types and self.view != "operations":
            raise OptionError("opTypes", "applies to view=operations only (the writes view holds WRITE_OPs)")
        preds += in_filter("op_type", op_types and [canonical_op_type(t) for t in op_types])
        preds += range_filter("index", opts.integer("fromIndex", minimum=0, maximum=INT64_MAX),
                              opts.integer("toIndex", minimum=0, maximum=INT64_MAX))
        self.option_predicates = tuple(preds)
        self.read_options = WalReadOptions(self.view, self.include_superseded, self.common, self.value_format)
        self.stream_options = parse_stream_options(opts)

    def schema(self) -> pa.Schema:
        return wal_schema(self.view, self.common.corrupt_column_or_none, self.value_format)

    def stream(self) -> YugabyteWalStream:
        """Tail the WAL directory: every tablet below it, per-tablet positions (``tail.py``)."""
        return YugabyteWalStream(self)

    def can_push(self, predicate: Predicate) -> bool:
        return super().can_push(predicate) and predicate.column in self.schema().names

    def accept_file_name(self, name: str) -> bool:
        # wal-NNNNNNNNN only: index.NNNNNNNNN (the log index), .tmp.newsegment* (preallocation) and the rest are not
        # segments.
        return SEGMENT_NAME.match(name) is not None

    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        paths = list(paths) if paths is not None else self.paths
        if not paths:
            raise OptionError("path", "no path given: use .load(path) or the paths argument")
        return list_files(paths, accept_name=self.accept_file_name, glob_filter=self.common.path_glob_filter,
                          recursive=True)

    def tablets(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[TabletRef]:
        """Files grouped by tablet folder, segments in sequence order, pruned by table/tablet ids."""
        everything = (*self.option_predicates, *predicates)
        tables = allowed_values(everything, "table_id")
        tablets = allowed_values(everything, "tablet_id")
        # one display name per file (a directory of a large cluster lists hundreds of thousands of segments)
        groups: dict[str, list[tuple[int, str, FileEntry]]] = {}
        for entry in files:
            folder, _, base = display_name(entry.uri).rpartition("/")
            m = SEGMENT_NAME.match(base)
            groups.setdefault(folder, []).append((int(m.group(1)) if m else 0, entry.uri, entry))
        out = []
        for folder in sorted(groups):
            table_id, tablet_id = tablet_ids_from_path(groups[folder][0][1])
            if tables is not None and table_id not in tables:
                continue
            if tablets is not None and tablet_id not in tablets:
                continue
            entries = [e for _, _, e in sorted(groups[folder], key=lambda k: (k[0], k[1]))]
            out.append(TabletRef(table_id, tablet_id, tuple((e.uri, e.size) for e in entries)))
        return out

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        """Tablets packed into splits of about ``maxPartitionBytes`` (a tablet is never cut: see the module doc).

        A cluster has many small tablets; one task per tablet would spend more time scheduling than reading.
        """
        splits: list[Split] = []
        group: list[TabletRef] = []
        group_bytes = 0

        def close() -> None:
            if group:
                hints = (("tablets", TabletGroup(tuple(group))),)
                splits.append(Split(display_name(group[0].segments[0][0]), 0, None, group_bytes, hints))

        for t in self.tablets(files, predicates):
            size = sum(size for _, size in t.segments)
            if group and group_bytes + size > self.common.max_partition_bytes:
                close()
                group, group_bytes = [], 0
            group.append(t)
            group_bytes += size
        close()
        return splits

    def _index_range(self, predicates: Sequence[Predicate]) -> tuple[int | None, int | None]:
        low, low_inc, high, high_inc = value_range((*self.option_predicates, *predicates), "index")
        low = (low if low_inc else low + 1) if isinstance(low, int) and not isinstance(low, bool) else None
        high = (high if high_inc else high - 1) if isinstance(high, int) and not isinstance(high, bool) else None
        return low, high

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        index_range = self._index_range(predicates)
        group = split.hint("tablets")
        tablets = group.tablets if group is not None else ()
        yield from filter_batches(iter_tablet_batches(tablets, self.read_options, predicates, index_range),
                                  self.option_predicates, self.common.corrupt_column_or_none)
