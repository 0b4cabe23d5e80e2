"""The ``tarantool-replication`` format: a live Tarantool server read as an anonymous replica.

Batch reads take the vclock range ``[startingPosition, endingPosition)``; ``stream()`` follows the server.
Protocol and guarantees: ``docs/formats/tarantool-replication.md``.

Options (case-insensitive):

- ``uri`` (or the load path): ``tarantool://user@host:port``; ``password``. Neither the password nor the user
  appears in rows (``file`` is ``tarantool://host:port``), errors, logs or reprs.
- ``startingPosition``: ``latest`` (streaming default), ``earliest`` (batch default: the oldest checkpoint the
  server keeps), ``snapshot`` (the whole state first, then the changes), or a JSON vclock ``{"1": 5120}`` /
  an offset JSON returned by a previous run.
- ``endingPosition`` (batch only): ``latest`` (default) or a JSON vclock / offset.
- ``readTimeout`` (seconds, default 10): longest wait for any byte (rows or heartbeats) on a connection.
- ``reconnectTimeout`` (seconds, default 300; 0: no retry): how long a refused or lost connection is retried,
  with growing pauses, each try logged at WARNING (:mod:`spark_logsource.streaming.retry`), on the driver and
  in reading tasks (which resume after the last row received) — a server restart or failover is ridden through.
- ``ackInterval`` (seconds, default 0.25): how often the reader acknowledges (the server drops a replica silent
  for 4 × its ``replication_timeout``).
- ``failOnDataLoss`` (default true): fail with DataLossError when the server's xlogs for the range are gone;
  false logs a warning and continues after the gap.
- ``maxRowsPerTrigger``: LSNs per micro-batch (rounded up to whole transactions).
- ``maxPacketBytes`` (default 256m): the largest packet (one row) accepted from the server.
- ``connections`` (batch only; default 2, the best measured on 2 cores; 1: one connection): a range in which one
  origin advances is cut into up to this many parts of at least 16,384 LSNs, each read over a connection of its
  own; the server relays each subscription on a thread of its own (:mod:`spark_logsource.tarantool.stream.parts`).
  Spark makes each part a task; ``iter_batches`` / ``read`` read the parts at once, in order, the parts ahead
  holding at most 256 MiB of batches.
- ``spaceId``, ``replicaId``, ``types``, ``tupleFormat``: as in ``tarantool-xlog``; plus the common ``mode``,
  ``columnNameOfCorruptRecord``, ``batchSize``.
- ``view`` rows|space and ``space``: ``view=space`` streams one space's typed changes (``readStream`` and
  ``follow`` only; ``docs/formats/tarantool-typed.md``, ``tarantool/table/live_space.py``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate, filter_batches
from spark_logsource.io.fs import FileEntry
from spark_logsource.logformat import LogFormat, Split
from spark_logsource.net import Secret
from spark_logsource.options import OptionMap
from spark_logsource.streaming.retry import parse_reconnect
from spark_logsource.tarantool.format import TUPLE_FORMATS, TarantoolXlogFormat, row_filters
from spark_logsource.tarantool.read.reader import xlog_schema
from spark_logsource.tarantool.stream.handshake import Endpoint
from spark_logsource.tarantool.stream.live import LiveSlice, LiveStream, parse_offset
from spark_logsource.tarantool.stream.packets import MAX_PACKET_BYTES
from spark_logsource.tarantool.stream.parts import read_in_order, split_slice
from spark_logsource.tarantool.table.catalog import SpaceHistory
from spark_logsource.tarantool.table.live_space import LiveSpaceStream, server_history
from spark_logsource.tarantool.table.space_view import SpaceView

_NAMED_POSITIONS = ("latest", "earliest", "snapshot")


def _position(opts: OptionMap, name: str, default: str, allowed: Sequence[str]) -> str:
    value = opts.string(name)
    if value is None:
        return default
    text = value.strip()
    if text.lower() in allowed:
        return text.lower()
    try:
        data = json.loads(text)
    except ValueError:
        raise OptionError(name, f"expected {', '.join(allowed)} or a JSON vclock like {{\"1\": 5120}}") from None
    if not isinstance(data, dict):
        raise OptionError(name, "expected a JSON object (a vclock or an offset)")
    if "kind" in data:
        parse_offset(data, name)
    return text


class TarantoolReplicationFormat(LogFormat):
    name = "tarantool-replication"
    # Command line (``spark-logsource follow tarantool://user@host:3301``): the row filters of tarantool-xlog.
    cli_title = "tarantool-replication (a live server as an anonymous replica)"
    cli_flags = tuple(f for f in TarantoolXlogFormat.cli_flags if f.option in ("spaceId", "replicaId", "types"))
    text_options = TarantoolXlogFormat.text_options
    json_text_columns = TarantoolXlogFormat.json_text_columns
    uri_schemes = ("tarantool",)
    can_follow = True

    def __repr__(self) -> str:
        return f"TarantoolReplicationFormat({self.endpoint.display})"

    def _parse_options(self, opts: OptionMap) -> None:
        view = opts.string("view")
        if view is not None and view.strip().lower() not in ("rows", "space"):
            raise OptionError("view", f"view={view} is available on tarantool-xlog only (files of a wal_dir / "
                                      "memtx_dir); tarantool-replication gives the log's rows or view=space")
        self.space_option = opts.string("space")
        self.typed = view is not None and view.strip().lower() == "space"
        if self.typed and not self.space_option:
            raise OptionError("space", "view=space needs the option space (a space name or id)")
        if self.space_option is not None and not self.typed:
            raise OptionError("space", "applies to view=space only")
        self._space_view: SpaceView | None = None
        uri = opts.string("uri")
        if uri is None and len(self.paths) == 1:
            uri = self.paths[0]
        if not uri:
            raise OptionError("uri", "no server given: option uri = tarantool://user@host:port")
        self.endpoint, uri_password = Endpoint.parse(uri)
        self.paths = []
        password = opts.string("password")
        self.password = Secret(password) if password is not None else (uri_password or Secret(None))
        self.starting_position = _position(opts, "startingPosition", "latest", _NAMED_POSITIONS)
        self.batch_starting_position = _position(opts, "startingPosition", "earliest", _NAMED_POSITIONS)
        self.ending_position = _position(opts, "endingPosition", "latest", ("latest",))
        self.read_timeout = opts.seconds("readTimeout", 10.0, minimum=0.05)
        self.reconnect = parse_reconnect(opts)
        self.ack_interval = opts.seconds("ackInterval", 0.25, minimum=0.01)
        self.fail_on_data_loss = opts.boolean("failOnDataLoss", True)
        self.max_rows_per_trigger = opts.integer("maxRowsPerTrigger", None, minimum=1)
        self.max_packet_bytes = opts.size("maxPacketBytes", MAX_PACKET_BYTES)
        self.connections = opts.integer("connections", 2, minimum=1, maximum=64)
        self.tuple_format = opts.choice("tupleFormat", TUPLE_FORMATS, "variant")
        self.option_predicates = tuple(row_filters(opts))
        if self.typed:
            self.tuple_format = "msgpack"  # the typed rows are made from the values as stored
            self.option_predicates = ()

    def schema(self) -> pa.Schema:
        if self.typed:
            return self.space_view().schema()
        return self.rows_schema()

    def rows_schema(self) -> pa.Schema:
        """The plain rows' schema (what the replica decodes, also under view=space)."""
        return xlog_schema(self.tuple_format, self.common.corrupt_column_or_none)

    def space_view(self) -> SpaceView:
        """view=space: the typed view of the space as the server defines it now (read once, on the driver)."""
        if self._space_view is None:
            assert self.space_option is not None
            space = self.space_option

            def read() -> SpaceHistory:
                with LiveStream(self)._connect() as conn:
                    return server_history(conn, space)[0]

            history = self.reconnect.call(read, "reading the space's definition")
            self._space_view = SpaceView.of_history(self, history)
        return self._space_view

    def accept_file_name(self, name: str) -> bool:
        return False

    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        return []  # a server, not files

    def extra_allowed_options(self) -> Iterable[str]:
        return ("verifyChecksums", "maxPartitionBytes", "pathGlobFilter", "recursiveFileLookup")

    def stream(self) -> LiveStream:
        if self.typed:
            return LiveSpaceStream(self)
        return LiveStream(self)

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        """Batch read: the slices of ``[startingPosition, endingPosition)``, resolved against the server now, cut
        into up to ``connections`` parts."""
        if self.typed:
            raise OptionError("view", "view=space on tarantool-replication is for readStream (and follow) only; a "
                                      "batch read of one space's changes reads the WAL files (tarantool-xlog)")
        stream = self.stream()
        start = stream.resolve_position(self.batch_starting_position)
        end = stream.resolve_position(self.ending_position)
        slices = [part for s in stream.plan(start, end) for part in split_slice(s, self.connections)]
        return [Split(self.endpoint.display, 0, None, 0, (("slice", s),)) for s in slices]

    def iter_batches(self, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        """The planned parts read at once, each over its own connection; batches in the range's order."""
        splits = self.plan(self.list_files(), predicates)
        yield from read_in_order([functools.partial(self.read_split, s, predicates) for s in splits],
                                 name=f"tarantool-replication {self.endpoint.display}")

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        slice_ = split.hint("slice")
        if not isinstance(slice_, LiveSlice):
            raise TypeError("a tarantool-replication split carries a LiveSlice")
        yield from filter_batches(self.stream().read_slice(slice_), predicates, self.common.corrupt_column_or_none)
