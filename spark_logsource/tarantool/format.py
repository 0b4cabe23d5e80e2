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

File pruning by LSN range: :func:`spark_logsource.tarantool.read.prune.prune_by_lsn`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate, filter_batches, in_filter, range_filter
from spark_logsource.io.fs import FileEntry, display_name, open_input
from spark_logsource.logformat import CliFlag, LogFormat, Split
from spark_logsource.options import OptionMap
from spark_logsource.streaming.stream import LogStream
from spark_logsource.tarantool.iproto import REQUEST_TYPES
from spark_logsource.tarantool.read.prune import prune_by_lsn
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches, xlog_schema
from spark_logsource.tarantool.stream.tail import TarantoolDirStream, parse_stream_options
from spark_logsource.tarantool.table.stream import SpaceDirStream
from spark_logsource.tarantool.table.views import make_typed_view

if TYPE_CHECKING:
    from spark_logsource.tarantool.table.space_view import SpaceView
    from spark_logsource.tarantool.table.state import StateView

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
        self.starting_text = opts.string("startingPosition")  # view=space: an offset's own "space"/"snapshot" keys
        self.typed_view = _typed_view_options(opts)  # view=space|state: built on first use (reads the catalog)
        self._typed: SpaceView | StateView | None = None

    def schema(self) -> pa.Schema:
        if self.typed_view is not None:
            return self.typed().schema()
        return xlog_schema(self.tuple_format, self.common.corrupt_column_or_none)

    def typed(self) -> SpaceView | StateView:
        """The ``view=space`` / ``view=state`` reader (``space_view.py``, ``state.py``), built once, on the driver."""
        if self._typed is None:
            assert self.typed_view is not None  # asked for by the methods a view= read reaches
            self._typed = make_typed_view(self, self.typed_view)
        return self._typed

    def can_push(self, predicate: Predicate) -> bool:
        if self.typed_view is not None:
            return bool(self.typed().can_push(predicate))
        return super().can_push(predicate)

    def stream(self) -> LogStream:
        """``readStream`` / :func:`~spark_logsource.api.follow`: tail the WAL directory (``docs/streaming.md``);
        ``view=space`` tails it with one space's typed rows (``tarantool/table/stream.py``)."""
        if self.typed_view is not None and self.typed_view["view"] == "space":
            return SpaceDirStream(self)
        if self.typed_view is not None:
            raise OptionError("view", f"view={self.typed_view['view']} is available in batch reads only "
                                      "(spark.read, spark_logsource.read, spark-logsource cat); a stream reads "
                                      "the rows view (no view option) or view=space")
        if self.stream_options.starting == "snapshot":
            raise OptionError("startingPosition", "startingPosition=snapshot needs view=space (the rows view "
                                                  "streams xlogs only: start at earliest, latest or an offset)")
        return TarantoolDirStream(self)

    def accept_file_name(self, name: str) -> bool:
        if name.endswith(".inprogress"):
            return self.include_in_progress and name[: -len(".inprogress")].endswith(_LISTED_SUFFIXES)
        return name.endswith(_LISTED_SUFFIXES)

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        if self.typed_view is not None:
            return self.typed().plan(files, predicates)
        everything = (*self.option_predicates, *predicates)
        keep = prune_by_lsn(files, everything)
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
