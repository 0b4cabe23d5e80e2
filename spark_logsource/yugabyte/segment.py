"""Framing of YugabyteDB WAL segments (``wal-NNNNNNNNN``): header, entry headers and CRCs, footer, ends of files.

Layout (``docs/formats/yugabyte-wal.md``)::

    "yugalogf"  LE32 header_len  LogSegmentHeaderPB
    entry batches: LE32 length, LE32 crc32c(body), LE32 crc32c(the previous 8 bytes), body (LogEntryBatchPB)
    [closed segments: log-index blocks from footer.index_start_offset]
    [closed segments: LogSegmentFooterPB  "closedls"  LE32 footer_len]

:func:`open_segment` reads the head and the tail of a file; :class:`EntryScanner` walks its entry batches and
yields :class:`RawBatch` (a batch whose CRCs verify) or :class:`BadRange` (bytes that are not one, up to the next
valid batch). How a walk ended is in :attr:`EntryScanner.end_status`: ``footer`` (read up to the footer or the
index blocks), ``zero_tail`` (preallocated zeros after the last entry), ``torn_tail`` (a partially written
last entry, with no valid entry header after it: YugabyteDB accepts this for a segment without footer), or
``corruption``. Every length is checked against the file before anything is allocated.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import crc32c

from spark_logsource.errors import (
    ChecksumError,
    CorruptDataError,
    DecodeError,
    TruncatedDataError,
    UnsupportedDataError,
)
from spark_logsource.framing import BadRange
from spark_logsource.io.window import READ_CHUNK, Window, source_size
from spark_logsource.yugabyte.messages import decode_footer, decode_header, decode_index_block_header

__all__ = [
    "ENTRY_HEADER_SIZE",
    "EncryptedWalError",
    "EntryScanner",
    "RawBatch",
    "SegmentInfo",
    "open_segment",
    "read_index_blocks",
    "segment_window",
]

log = logging.getLogger(__name__)

HEADER_MAGIC = b"yugalogf"
FOOTER_MAGIC = b"closedls"
ENCRYPTED_MAGIC = b"encrypt!"
ENTRY_HEADER_SIZE = 12
MAGIC_AND_LENGTH = 12
#: Largest header or footer YugabyteDB accepts (kLogSegmentMaxHeaderOrFooterSize).
MAX_HEADER_OR_FOOTER = 8 << 20
#: Largest entry batch we read (YugabyteDB's batches are bounded by its RPC size, 32 MiB by default).
MAX_BATCH_BYTES = 256 << 20
_ZERO_HEADER = bytes(ENTRY_HEADER_SIZE)
_unpack_3i = struct.Struct("<III").unpack_from
_unpack_i = struct.Struct("<I").unpack_from
_NONZERO = re.compile(rb"[^\x00]")


class EncryptedWalError(UnsupportedDataError):
    """The segment is encrypted at rest (``encrypt!``): its universe key is not available to us."""


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the head and tail of one segment say."""

    path: str
    size: int
    #: ``closed`` (footer present), ``active`` (no footer) or ``uninitialized`` (all-zero head: preallocated).
    kind: str
    header: dict[str, Any] | None
    first_entry_offset: int
    footer: dict[str, Any] | None
    footer_offset: int | None
    #: Entries are read from ``first_entry_offset`` up to here (footer, index blocks, or the end of the file).
    read_up_to: int

    @property
    def sequence_number(self) -> int | None:
        return None if self.header is None else self.header.get("sequence_number")


@dataclass(frozen=True, slots=True)
class RawBatch:
    """An entry batch whose header and body CRCs verify: file offset of its entry header, and its body."""

    offset: int
    size: int
    body: bytes


def segment_window(source: Any, size: int | None = None) -> Window:
    """A bounded read buffer over ``source``, shared by :func:`open_segment` and :class:`EntryScanner`."""
    return Window(source, source_size(source) if size is None else size)


def open_segment(source: Any, path: str, size: int | None = None, window: Window | None = None) -> SegmentInfo:
    """Read the header and the footer of a segment (CorruptDataError, or EncryptedWalError, when they are bad).

    ``window`` (from :func:`segment_window`) lets the entry walk reuse the bytes already read.
    """
    size = source_size(source) if size is None else size
    window = Window(source, size) if window is None else window
    head = window.get(0, MAGIC_AND_LENGTH)
    if len(head) < MAGIC_AND_LENGTH:
        if head.count(0) == len(head):
            return SegmentInfo(path, size, "uninitialized", None, 0, None, None, 0)
        raise TruncatedDataError(path, 0, f"file of {size} bytes is shorter than a segment header")
    magic = head[:8]
    if magic != HEADER_MAGIC:
        if head == _ZERO_HEADER:
            # Preallocated, renamed into place, header never written: YugabyteDB's LogReader ignores it.
            return SegmentInfo(path, size, "uninitialized", None, 0, None, None, 0)
        if magic == ENCRYPTED_MAGIC:
            raise EncryptedWalError(path, 0, "encrypted WAL segment (encryption at rest): it cannot be decoded "
                                             "without the universe key; decrypt it with YugabyteDB's tools first")
        raise CorruptDataError(path, 0, f"not a YugabyteDB WAL segment (magic {magic.hex()})")
    header_len = _unpack_i(head, 8)[0]
    if header_len == 0 or header_len > MAX_HEADER_OR_FOOTER or MAGIC_AND_LENGTH + header_len > size:
        raise CorruptDataError(path, 8, f"bad segment header length {header_len} (file size {size})")
    try:
        header = decode_header(window.get(MAGIC_AND_LENGTH, header_len))
    except DecodeError as exc:
        raise exc.at(path, MAGIC_AND_LENGTH) from None
    first = MAGIC_AND_LENGTH + header_len
    footer = None
    footer_offset = None
    read_up_to = size
    tail = window.get(size - MAGIC_AND_LENGTH, MAGIC_AND_LENGTH) if size >= first + MAGIC_AND_LENGTH else b""
    if tail[:8] == FOOTER_MAGIC:
        footer_len = _unpack_i(tail, 8)[0]
        if footer_len == 0 or footer_len > MAX_HEADER_OR_FOOTER or footer_len > size - first - MAGIC_AND_LENGTH:
            raise CorruptDataError(path, size - 4, f"bad segment footer length {footer_len} (file size {size})")
        footer_offset = size - MAGIC_AND_LENGTH - footer_len
        try:
            footer = decode_footer(window.get(footer_offset, footer_len))
        except DecodeError as exc:
            raise exc.at(path, footer_offset) from None
        read_up_to = footer_offset
        index_start = footer.get("index_start_offset") or 0
        if index_start > 0:
            if not first <= index_start <= footer_offset:
                raise CorruptDataError(path, footer_offset,
                                       f"footer index_start_offset {index_start} outside [{first}, {footer_offset}]")
            read_up_to = index_start
    kind = "closed" if footer is not None else "active"
    return SegmentInfo(path, size, kind, header, first, footer, footer_offset, read_up_to)


def _header_is_valid(buf: bytes, i: int) -> bool:
    stored: int = _unpack_i(buf, i + 8)[0]
    return crc32c.crc32c(buf[i:i + 8]) == stored


class EntryScanner:
    """Walks the entry batches of one segment from ``start`` (default: the first entry) up to its readable end.

    ``end``, when given, is a batch boundary where the walk stops. ``verify_checksums=False`` skips the body CRC
    of good-looking batches (the 4-byte header CRC is always checked: it is what tells an entry from a torn
    tail).
    """

    def __init__(self, source: Any, info: SegmentInfo, *, start: int | None = None, end: int | None = None,
                 verify_checksums: bool = True, window: Window | None = None) -> None:
        self.info = info
        self.path = info.path
        self.window = Window(source, info.size) if window is None else window
        self.start = info.first_entry_offset if start is None else max(start, info.first_entry_offset)
        # ``end`` (a batch boundary found earlier, for streams) stops the walk before bytes written since
        self.limit = info.read_up_to if end is None else min(end, info.read_up_to)
        self.verify = verify_checksums
        self.end_status: str | None = None
        self.end_offset: int | None = None
        self.end_message = ""
        #: Whether a bad region was met (the walk may still have gone on past it).
        self.had_corruption = False

    # ---- finding valid entry headers (YugabyteDB's ScanForValidEntryHeaders) ----

    def find_valid_header(self, pos: int) -> int | None:
        """The first position in ``[pos, limit - 12]`` holding 12 bytes whose last 4 are the CRC of the first 8."""
        while pos + ENTRY_HEADER_SIZE <= self.limit:
            span = min(READ_CHUNK, self.limit - pos)
            chunk = self.window.get(pos, span + ENTRY_HEADER_SIZE - 1)
            last = min(span, len(chunk) - ENTRY_HEADER_SIZE + 1)
            seen = -1
            for m in _NONZERO.finditer(chunk):
                # a window holding no nonzero byte is never a valid header (crc32c of 8 zero bytes is not 0)
                for i in range(max(m.start() - ENTRY_HEADER_SIZE + 1, seen + 1, 0), min(m.start() + 1, last)):
                    if _header_is_valid(chunk, i):
                        return pos + i
                    seen = i
            pos += span
        return None

    def _is_valid_batch(self, pos: int) -> bool:
        head = self.window.get(pos, ENTRY_HEADER_SIZE)
        if len(head) < ENTRY_HEADER_SIZE or not _header_is_valid(head, 0):
            return False
        length: int
        body_crc: int
        length, body_crc, _ = _unpack_3i(head, 0)
        if length == 0 or pos + ENTRY_HEADER_SIZE + length > self.limit or length > MAX_BATCH_BYTES:
            return False
        return crc32c.crc32c(self.window.get(pos + ENTRY_HEADER_SIZE, length)) == body_crc

    def next_valid_batch(self, pos: int) -> int | None:
        """The next position at or after ``pos`` where a whole batch with good CRCs starts."""
        while True:
            found = self.find_valid_header(pos)
            if found is None or self._is_valid_batch(found):
                return found
            pos = found + 1

    # ---- the walk ----

    def _end(self, status: str, offset: int, message: str) -> None:
        self.end_status, self.end_offset, self.end_message = status, offset, message

    def _problem(self, pos: int, scan_from: int, error: CorruptDataError,
                 tail_status: str) -> tuple[BadRange | None, int | None]:
        """A framing problem at ``pos``: a tolerated end of an active segment, or a bad region and where to go on."""
        if self.info.footer is None and self.find_valid_header(scan_from) is None:
            message = f"{error.reason}; no valid entry header follows"
            log.info("%s: stopping at byte %d: %s", self.path, pos, message)
            self._end(tail_status, pos, message)
            return None, None
        self.had_corruption = True
        resume = self.next_valid_batch(pos + 1)
        if resume is None:
            self._end("corruption", pos, error.reason)
        return BadRange(pos, error, resume), resume

    def __iter__(self) -> Iterator[RawBatch | BadRange]:
        pos: int | None = self.start
        while pos is not None:
            item, pos = self._step(pos)
            if item is not None:
                yield item
        if self.end_status is None:
            self._end("footer" if self.info.footer is not None else "end_of_file", self.limit, "")

    def step(self, pos: int) -> tuple[RawBatch | BadRange | None, int | None]:
        """One step of the walk from the batch boundary ``pos``: (a batch, a bad range, or None at the end) and
        where the next step starts (None: the walk is over, :attr:`end_status` says how)."""
        return self._step(pos)

    def _step(self, pos: int) -> tuple[RawBatch | BadRange | None, int | None]:
        path, limit = self.path, self.limit
        if pos >= limit:
            self._end("footer" if self.info.footer is not None else "end_of_file", pos, "")
            return None, None
        remaining = limit - pos
        err: CorruptDataError
        if remaining < ENTRY_HEADER_SIZE:
            tail = self.window.get(pos, remaining)
            err = TruncatedDataError(path, pos, f"{remaining} bytes left, too few for an entry header")
            status = "zero_tail" if tail.count(0) == len(tail) else "torn_tail"
            return self._problem(pos, pos + 1, err, status)
        head = self.window.get(pos, ENTRY_HEADER_SIZE)
        if head == _ZERO_HEADER:
            err = CorruptDataError(path, pos, "all-zero entry header")
            return self._problem(pos, pos + ENTRY_HEADER_SIZE, err, "zero_tail")
        length, body_crc, header_crc = _unpack_3i(head, 0)
        actual = crc32c.crc32c(head[:8])
        if actual != header_crc:
            err = ChecksumError(path, pos, f"entry header checksum mismatch: stored 0x{header_crc:08x}, "
                                           f"computed 0x{actual:08x}")
            return self._problem(pos, pos + 1, err, "torn_tail")
        if length == 0:
            return self._problem(pos, pos + ENTRY_HEADER_SIZE,
                                 CorruptDataError(path, pos, "entry batch of length 0"), "torn_tail")
        end = pos + ENTRY_HEADER_SIZE + length
        if length > MAX_BATCH_BYTES or end > limit:
            err = TruncatedDataError(path, pos, f"entry batch of {length} bytes runs past byte {limit}")
            return self._problem(pos, pos + ENTRY_HEADER_SIZE, err, "torn_tail")
        body = self.window.get(pos + ENTRY_HEADER_SIZE, length)
        if self.verify:
            actual = crc32c.crc32c(body)
            if actual != body_crc:
                err = ChecksumError(path, pos, f"entry batch checksum mismatch: stored 0x{body_crc:08x}, "
                                               f"computed 0x{actual:08x}")
                return self._problem(pos, end, err, "torn_tail")
        return RawBatch(pos, ENTRY_HEADER_SIZE + length, body), end


_INDEX_ENTRY = struct.Struct("<qqq")  # term, segment sequence number, offset in segment


def read_index_blocks(source: Any, info: SegmentInfo) -> list[dict[str, Any]]:
    """The log-index blocks between ``footer.index_start_offset`` and the footer, checked (CorruptDataError).

    Each block: LE64 header length, ``LogIndexBlockHeaderPB``, then ``size`` bytes of 24-byte entries (LE64 term,
    segment sequence number, offset of the entry's batch), the first for ``start_op_index``.
    """
    if info.footer is None or not info.footer.get("index_start_offset") or info.footer_offset is None:
        return []
    window = Window(source, info.size)
    pos, end = info.read_up_to, info.footer_offset
    blocks = []
    while pos < end:
        if pos + 8 > end:
            raise CorruptDataError(info.path, pos, "log-index block header length runs into the footer")
        header_len = struct.unpack("<Q", window.get(pos, 8))[0]
        if header_len == 0 or pos + 8 + header_len > end:
            raise CorruptDataError(info.path, pos, f"bad log-index block header length {header_len}")
        try:
            header = decode_index_block_header(window.get(pos + 8, header_len))
        except DecodeError as exc:
            raise exc.at(info.path, pos + 8) from None
        size = header.get("size", 0)
        data_at = pos + 8 + header_len
        if size < 0 or data_at + size > end or size % _INDEX_ENTRY.size:
            raise CorruptDataError(info.path, pos, f"bad log-index block size {size}")
        data = window.get(data_at, size)
        if crc32c.crc32c(data) != header.get("crc32c"):
            raise ChecksumError(info.path, pos, "log-index block checksum mismatch")
        start = header.get("start_op_index", 0)
        entries = [{"op_index": start + i, "term": t, "segment_sequence_number": seq, "offset_in_segment": off}
                   for i, (t, seq, off) in enumerate(_INDEX_ENTRY.iter_unpack(data))]
        blocks.append({"offset": pos, "header_len": header_len, **header, "entries": entries})
        pos = data_at + size
        if header.get("is_last_block"):
            break
    return blocks
