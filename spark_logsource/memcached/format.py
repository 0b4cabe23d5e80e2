"""The ``memcached-tap`` format: captured TAP streams (``*.tap`` files) and live TAP servers.

- ``load("/captures/*.tap")``: each file is a server→client byte stream, read whole by one task.
- ``option("uri", "tap://host:11211").load()`` (or ``load("tap://host:11211")``): a live DUMP of every item (or,
  with ``takeover=true`` and a ``vbuckets`` list, a vbucket takeover), read by one task until the server closes.
- ``readStream`` with ``uri``: the live change stream (:class:`~spark_logsource.memcached.stream.TapStream`).

Options: ``uri``, ``name``, ``startingPosition`` (backfill | now | epoch second; streams), ``vbuckets``, ``ack``,
``keysOnly``, ``takeover``, ``registered`` (streams), ``connectTimeout``, ``readTimeout`` (seconds),
``maxPacketBytes``, ``maxRowsPerTrigger``, ``maxBytesPerTrigger``, plus the common ones. Wire facts:
``docs/formats/memcached-tap.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, DecodeError, OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import FileEntry, display_name, open_input
from spark_logsource.logformat import CliFlag, LogFormat, Split
from spark_logsource.memcached.capture import iter_capture_batches
from spark_logsource.memcached.client import ConnectSpec, TapConnection, TapEndpoint, dump_chunks, parse_tap_uri
from spark_logsource.memcached.position import backfill_age, resume_offset
from spark_logsource.memcached.protocol import (
    DEFAULT_MAX_BODY,
    OP_NOOP,
    OP_SASL_AUTH,
    OP_TAP_CONNECT,
    REQUEST_MAGIC,
    RESPONSE_MAGIC,
    TAP_EXTRAS,
)
from spark_logsource.memcached.stream import TapStream
from spark_logsource.memcached.tap import BatchSpec, packet_batches, tap_schema
from spark_logsource.options import OptionMap
from spark_logsource.streaming.stream import LogStream

log = logging.getLogger(__name__)

VBUCKET_MAX = 0xFFFF


class MemcachedTapFormat(LogFormat):
    name = "memcached-tap"
    # Command line: ``cat`` of captures or of a live DUMP (``tap://host:port``), ``follow`` of a live server.
    cli_title = "memcached-tap (*.tap captures, tap://host:port servers)"
    cli_flags = (
        CliFlag("--client-name", "name", "TAP client name (follow: the server keeps a registered name's place)",
                commands=frozenset({"cat", "follow"})),
        CliFlag("--vbucket", "vbuckets", "vbucket to stream from a tap:// server (repeatable)", int,
                repeatable=True, commands=frozenset({"cat", "follow"})),
    )
    uri_schemes = ("tap",)
    can_follow = True

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        """A ``.tap`` capture, or bytes starting as a TAP server's stream does (docs/formats/memcached-tap.md):
        a NOOP or TAP request with its opcode's extras length, or the answer to TAP_CONNECT / SASL_AUTH."""
        if name.endswith(".tap"):
            return True
        if len(head) < 5:
            return False
        magic, opcode, extras = head[0], head[1], head[4]
        if magic == REQUEST_MAGIC:
            return (opcode == OP_NOOP and extras == 0) or TAP_EXTRAS.get(opcode) == extras
        return magic == RESPONSE_MAGIC and opcode in (OP_TAP_CONNECT, OP_SASL_AUTH)

    def _parse_options(self, opts: OptionMap) -> None:
        uri = opts.string("uri")
        live_paths = [p for p in self.paths if p.lower().startswith("tap://")]
        if live_paths:  # load("tap://host:port") and `spark-logsource follow tap://...` name the server as a path
            if uri or len(self.paths) > 1:
                raise OptionError("path", "a tap:// server is read alone: one server, no capture files, no uri")
            uri, self.paths = live_paths[0], []
        self.endpoint: TapEndpoint | None = parse_tap_uri(uri) if uri else None
        if self.endpoint is not None and self.paths:
            raise OptionError("uri", "give either a tap:// uri (live server) or paths (captures), not both")
        self.conn_name = opts.string("name", "") or ""
        self.starting_position = opts.string("startingPosition")
        vbuckets = opts.int_list("vbuckets", minimum=0, maximum=VBUCKET_MAX)
        self.vbuckets = tuple(vbuckets) if vbuckets else None
        self.ack = opts.boolean("ack", True)
        self.keys_only = opts.boolean("keysOnly", False)
        takeover = opts.raw("takeover")
        # Takeover hands the vbuckets' ownership to us and leaves them dead on the server: only an explicit
        # "true" asks for it, never a truthy spelling or a default.
        if takeover is not None and str(takeover).strip().lower() not in ("true", "false"):
            raise OptionError("takeover", f"expected true or false, got {takeover!r}")
        self.takeover = takeover is not None and str(takeover).strip().lower() == "true"
        if self.takeover and not self.vbuckets:
            raise OptionError("takeover", "takeover needs the list of vbuckets to move (option vbuckets)")
        if self.takeover and self.endpoint is None:
            raise OptionError("takeover", "takeover needs a live server (option uri)")
        self.registered = opts.boolean("registered", True)
        self.connect_timeout = opts.seconds("connectTimeout", 10.0, minimum=0, maximum=86400, exclusive_minimum=True)
        self.read_timeout = opts.seconds("readTimeout", 60.0, minimum=0, maximum=86400, exclusive_minimum=True)
        self.max_body = opts.size("maxPacketBytes", DEFAULT_MAX_BODY)
        self.max_rows_per_trigger = opts.integer("maxRowsPerTrigger", minimum=1)
        self.max_bytes_per_trigger = opts.size("maxBytesPerTrigger", 64 << 20) if "maxBytesPerTrigger" in opts \
            else None

    def schema(self) -> pa.Schema:
        return tap_schema(self.common.corrupt_column_or_none)

    def accept_file_name(self, name: str) -> bool:
        return name.endswith(".tap")

    @property
    def source_name(self) -> str | None:
        return self.endpoint.source if self.endpoint is not None else None

    def batch_spec(self, source: str) -> BatchSpec:
        return BatchSpec(source, self.schema(), self.common.batch_size, self.common.mode)

    # --- batch reads ---------------------------------------------------------------------------------------------
    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        if self.endpoint is not None and paths is None:
            return [FileEntry(self.endpoint.source, 0)]
        return super().list_files(paths)

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        # A TAP capture has no sync marker to start a split at, and a live DUMP is one connection: one split each.
        return [Split(f.uri, 0, None, f.size) for f in files]

    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        if self.endpoint is not None and split.uri == self.endpoint.source:
            yield from self._read_live()
            return
        path = display_name(split.uri)
        with open_input(split.uri) as source:
            size = source.size()
            yield from iter_capture_batches(source, path, size, self.batch_spec(path), self.max_body)

    def dump_spec(self) -> ConnectSpec:
        if self.starting_position is not None:
            raise OptionError("startingPosition", "applies to readStream only (a batch read is a DUMP)")
        return ConnectSpec(name=self.conn_name.encode(), dump=not self.takeover, vbuckets=self.vbuckets,
                           takeover=self.takeover, support_ack=self.ack, keys_only=self.keys_only)

    def connection(self, spec: ConnectSpec) -> TapConnection:
        assert self.endpoint is not None
        return TapConnection(self.endpoint, spec, connect_timeout=self.connect_timeout,
                             read_timeout=self.read_timeout, max_body=self.max_body)

    def _read_live(self) -> Iterator[pa.RecordBatch]:
        spec = self.dump_spec()
        if self.takeover:
            log.warning("%s: TAKEOVER of vbuckets %s: the server hands them over and stops serving them",
                        self.source_name, list(self.vbuckets or ()))
        batch_spec = self.batch_spec(self.source_name or "")
        with self.connection(spec) as conn:
            for chunk in dump_chunks(conn):

                def at_chunk(pos: int, err: DecodeError, offset: int = chunk.offset) -> CorruptDataError:
                    return _live_error(batch_spec.source, offset + pos, err)

                yield from packet_batches(batch_spec, chunk.data, chunk.starts, None, at_chunk)

    # --- streaming -----------------------------------------------------------------------------------------------
    def stream(self) -> LogStream:
        if self.endpoint is None:
            raise OptionError("uri", "readStream of memcached-tap needs a live server: option uri=tap://host:port")
        if self.takeover:
            raise OptionError("takeover", "takeover is a one-shot batch read, not a stream")
        if self.endpoint is not None:
            resume_offset(self.starting_position, self.endpoint.source)  # a bad offset fails here, not later
        if self.registered and not self.conn_name:
            raise OptionError("name", "a stream needs a TAP client name: the server keeps a registered name's "
                                      "place and re-sends what was not acknowledged (or set registered=false to "
                                      "accept a new backfill on every restart)")
        return TapStream(self)

    def stream_spec(self) -> ConnectSpec:
        return ConnectSpec(name=self.conn_name.encode(), backfill_age=backfill_age(self.starting_position),
                           vbuckets=self.vbuckets, support_ack=self.ack, keys_only=self.keys_only, checkpoint=True,
                           registered=self.registered)


def _live_error(source: str, stream_byte: int, err: DecodeError) -> CorruptDataError:
    return CorruptDataError(source, stream_byte + (err.pos or 0), err.reason)
