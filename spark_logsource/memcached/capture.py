"""Read a captured server→client TAP byte stream (``*.tap``: packets back to back) as Arrow batches.

The file is read in chunks through the same push buffer as a socket, so memory stays within one chunk plus the
largest allowed packet. TAP packets carry no checksum: damage is found only where it breaks the framing (a bad
magic, impossible lengths, an engine-specific length past the body, a packet cut at end of file). After such a
region the reader looks for the next plausible header (see ``docs/formats/memcached-tap.md``) and goes on; the
region becomes one corrupt-record row (PERMISSIVE), a logged skip (DROPMALFORMED) or an error (FAILFAST), always
naming the file and the byte offset.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, DecodeError, TruncatedDataError
from spark_logsource.memcached.protocol import HEADER_SIZE, REQUEST_MAGIC, PacketBuffer, header_problem, read_header
from spark_logsource.memcached.tap import BatchSpec, ServerErrorResponse, corrupt_batch, packet_batches
from spark_logsource.options import ParseMode

log = logging.getLogger(__name__)

CHUNK = 4 << 20


def _find_header(data: bytes, start: int, stream_base: int, eof: int, max_body: int) -> int | None:
    """Position in ``data`` (at or after ``start``) of the next request header whose packet fits before ``eof``."""
    pos = start
    while True:
        pos = data.find(REQUEST_MAGIC.to_bytes(1, "big"), pos)
        if pos < 0 or len(data) - pos < HEADER_SIZE:
            return None
        h = read_header(data, pos)
        if header_problem(h, max_body) is None and stream_base + pos + h.size <= eof:
            return pos
        pos += 1


def iter_capture_batches(source: Any, path: str, size: int, spec: BatchSpec, max_body: int,
                         chunk: int = CHUNK) -> Iterator[pa.RecordBatch]:
    """Every packet of the capture ``source`` (a binary file of ``size`` bytes) as batches of ``spec``."""
    buf = PacketBuffer(max_body)
    read = 0
    bad_at: int | None = None  # start of the bad region being skipped

    def on_error(pos_in_data: int, base: int, err: DecodeError) -> CorruptDataError:
        if isinstance(err, ServerErrorResponse):
            return CorruptDataError(path, base + pos_in_data, err.reason)
        return err.at(path, base + pos_in_data)

    def report(error: CorruptDataError) -> Iterator[pa.RecordBatch]:
        if spec.mode is ParseMode.FAILFAST:
            raise error
        if spec.mode is ParseMode.DROPMALFORMED:
            log.warning("dropping malformed data: %s", error)
            return
        yield corrupt_batch(spec, [error.offset], [str(error)])

    while True:
        at_eof = read >= size
        if not at_eof:
            got = buf.feed_from(source.readinto, min(chunk, size - read))  # no copy between file and framing
            if not got:
                size = read  # the file shrank while we read it: treat what we have as the end
                at_eof = True
            else:
                read += got
        if bad_at is not None:
            rest = buf.rest()
            found = _find_header(rest, 1 if buf.offset == bad_at else 0, buf.offset, size, max_body)
            if found is None:
                if not at_eof:
                    buf.skip(max(0, len(rest) - HEADER_SIZE))  # keep a possible header cut by the chunk edge
                    continue
                buf.skip(len(rest))
                return
            buf.skip(found)
            log.info("%s: resynchronised at byte %d after a bad region at %d", path, buf.offset, bad_at)
            bad_at = None
        base, packets, starts, problem = buf.take_all(copy=False)

        def at_base(pos_in_data: int, err: DecodeError, base: int = base) -> CorruptDataError:
            return on_error(pos_in_data, base, err)

        yield from packet_batches(spec, packets, starts, base, at_base)
        if problem is not None:
            bad_at = buf.offset
            yield from report(CorruptDataError(path, bad_at, problem))
            continue
        if at_eof:
            left = buf.pending
            if left:
                bad_at = buf.offset
                if left < HEADER_SIZE:
                    reason = f"capture ends {left} bytes into a 24-byte packet header"
                else:
                    h = read_header(buf.rest())
                    reason = f"capture ends {left} bytes into a packet of {h.size} bytes"
                yield from report(TruncatedDataError(path, bad_at, reason))
                continue
            return
