"""Framing of Tarantool xlog/snap files: fixheaders, checksums, zstd, resync, bad regions, partial tails.

Block layout (tarantool ``src/box/xlog.c`` ``xlog_fixheader_decode`` / ``xlog_tx_write``,
``docs/formats/tarantool-xlog.md``)::

    [4]  magic, big-endian bytes d5 ba 0b ab (plain rows) or d5 ba 0b ba (one zstd frame)
    msgpack uint  len      payload bytes as stored (compressed for zstd blocks)
    msgpack uint  crc32p   always 0 (unused)
    msgpack uint  crc32c   CRC-32C (Castagnoli) of the stored payload, initial value 0, no final XOR
    padding                a msgpack str header + filler up to 19 bytes in all (filler not validated)
    [len] payload
    ...
    [4]  d5 10 ad ed       end of file (absent while the file is being written or after a crash)

:class:`BlockScanner` walks the blocks whose fixheader starts in a byte range ``[start, end)`` of one file
through a bounded buffer and yields :class:`Block` (a good frame, payload decompressed), :class:`BadRange`
(bytes that are not a good block, up to the next sync point) and never anything else; a partial last block of a
file without EOF marker is logged at info level and ends the scan.  A *sync point* is a position holding a
block magic whose fixheader parses, whose payload lies inside the file and whose CRC verifies (always checked,
whatever ``verify_checksums`` says).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import crc32c

from spark_logsource.errors import ChecksumError, CorruptDataError
from spark_logsource.framing import BadRange
from spark_logsource.io.compression import zstd_frame
from spark_logsource.io.window import READ_CHUNK, Window, source_size

__all__ = [
    "EOF_MAGIC",
    "FIXHEADER_SIZE",
    "MAX_BLOCK_BYTES",
    "MAX_DECOMPRESSED_BYTES",
    "PLAIN_MAGIC",
    "ZSTD_MAGIC",
    "BadRange",
    "Block",
    "BlockScanner",
    "FixHeader",
    "block_crc32c",
    "decompress_block",
    "parse_fixheader",
    "source_size",
]

log = logging.getLogger(__name__)

PLAIN_MAGIC = b"\xd5\xba\x0b\xab"
ZSTD_MAGIC = b"\xd5\xba\x0b\xba"
EOF_MAGIC = b"\xd5\x10\xad\xed"
_MAGIC_PREFIX = b"\xd5\xba\x0b"
FIXHEADER_SIZE = 19
#: Largest stored payload we accept (Tarantool's blocks are ~128 KiB; a 10 000-row transaction ~0.5 MB).
MAX_BLOCK_BYTES = 256 << 20
#: Largest decompressed payload we accept from one zstd block.
MAX_DECOMPRESSED_BYTES = 256 << 20


def block_crc32c(data: bytes) -> int:
    """Tarantool's block checksum: CRC-32C with initial value 0 and no final XOR (``crc32_calc(0, ...)``)."""
    return crc32c.crc32c(data, 0xFFFFFFFF) ^ 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class FixHeader:
    """A parsed 19-byte fixheader."""

    compressed: bool
    length: int
    crc32c: int


def _mp_uint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A msgpack unsigned integer inside ``buf[pos:end]`` → (value, next position); ValueError if none."""
    if pos >= end:
        raise ValueError("fixheader ends early")
    first = buf[pos]
    if first <= 0x7F:
        return first, pos + 1
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}.get(first)
    if width is None or pos + 1 + width > end:
        raise ValueError(f"fixheader field is not a msgpack uint (byte 0x{first:02x})")
    return int.from_bytes(buf[pos + 1 : pos + 1 + width], "big"), pos + 1 + width


def parse_fixheader(buf: bytes) -> FixHeader:
    """Parse the 19 bytes of a fixheader (magic included); ValueError when they are not one."""
    magic = buf[:4]
    if magic == PLAIN_MAGIC:
        compressed = False
    elif magic == ZSTD_MAGIC:
        compressed = True
    else:
        raise ValueError("no block magic")
    if len(buf) < FIXHEADER_SIZE:
        raise ValueError("fixheader ends early")
    length, pos = _mp_uint(buf, 4, FIXHEADER_SIZE)
    _crc32p, pos = _mp_uint(buf, pos, FIXHEADER_SIZE)
    crc, pos = _mp_uint(buf, pos, FIXHEADER_SIZE)
    if crc > 0xFFFFFFFF:
        raise ValueError("fixheader crc32c does not fit 32 bits")
    return FixHeader(compressed, length, crc)


def decompress_block(data: bytes, limit: int | None = None) -> bytes:
    """One zstd frame (no content size) → bytes, refusing output over ``limit`` (default
    :data:`MAX_DECOMPRESSED_BYTES`); :class:`~spark_logsource.errors.DecodeError` (a ValueError) if bad."""
    return zstd_frame(data, MAX_DECOMPRESSED_BYTES if limit is None else limit)


@dataclass(frozen=True, slots=True)
class Block:
    """A good block: file offset of its fixheader, total framed size, rows payload (decompressed)."""

    offset: int
    size: int
    payload: bytes
    compressed: bool


class BlockScanner:
    """Yields :class:`Block` / :class:`BadRange` for blocks whose fixheader starts in ``[start, end)``.

    ``data_offset`` is where the first block of the file begins (after the meta header).  When
    ``start <= data_offset`` the scan begins there; otherwise at the first sync point at or after ``start``.
    A bad region is reported by one split only: the one whose chain of blocks reaches it (the split where it
    begins, or the previous one when that split's last block ends exactly on it), so consecutive splits
    never repeat or lose one.
    """

    def __init__(
        self,
        source: Any,
        path: str,
        *,
        data_offset: int,
        start: int = 0,
        end: int | None = None,
        verify_checksums: bool = True,
        size: int | None = None,
    ) -> None:
        self.path = path
        self.size = source_size(source) if size is None else size
        self.window = Window(source, self.size)
        self.data_offset = data_offset
        self.start = start
        self.end = self.size if end is None else min(end, self.size)
        self.verify = verify_checksums
        self._ends_with_eof_marker: bool | None = None
        self._rows_failed = False

    # ---- helpers ----

    def _ends_with_eof(self) -> bool:
        if self._ends_with_eof_marker is None:
            self._ends_with_eof_marker = self.size >= 4 and self.window.get(self.size - 4, 4) == EOF_MAGIC
        return self._ends_with_eof_marker

    def _is_sync_point(self, pos: int) -> FixHeader | None:
        """The fixheader at ``pos`` if a complete, checksum-verified block starts there."""
        head = self.window.get(pos, FIXHEADER_SIZE)
        try:
            fix = parse_fixheader(head)
        except ValueError:
            return None
        if fix.length > MAX_BLOCK_BYTES or pos + FIXHEADER_SIZE + fix.length > self.size:
            return None
        payload = self.window.get(pos + FIXHEADER_SIZE, fix.length)
        return fix if block_crc32c(payload) == fix.crc32c else None

    def find_sync(self, pos: int, limit: int) -> int | None:
        """First sync point in ``[pos, limit)``, or None."""
        while pos < limit:
            # Search a 1 MiB window (+3 bytes so a magic across the window edge is seen).
            span = min(READ_CHUNK, limit - pos)
            chunk = self.window.get(pos, span + 3)
            i = 0
            while True:
                hit = chunk.find(_MAGIC_PREFIX, i)
                if hit < 0 or hit >= span:
                    break
                candidate = pos + hit
                if hit + 3 < len(chunk) and chunk[hit + 3] in (0xAB, 0xBA) and self._is_sync_point(candidate):
                    return candidate
                # _is_sync_point may have moved the window; re-read the search chunk.
                chunk = self.window.get(pos, span + 3)
                i = hit + 1
            pos += span
        return None

    def _bad(self, pos: int, error: CorruptDataError) -> tuple[BadRange, int | None]:
        """A bad region at ``pos`` and the next sync point in this split (None: the split is done)."""
        return BadRange(pos, error), self.find_sync(pos + 1, self.end)

    # ---- the scan ----

    def __iter__(self) -> Iterator[Block | BadRange]:
        """The scan.  Blocks are chained (next = end of the previous); the chain of this split stops at the
        first position at or past ``end`` that is a sync point, because the next split starts exactly there.
        Whatever else the chain meets past ``end`` (a bad block, the EOF marker, a partial tail) is handled
        here, and the next split, which syncs past it, never sees it: no region is reported twice."""
        if self.start <= self.data_offset:
            if self.data_offset >= self.end:
                return  # the split holding data_offset (or none, for a header-only file) reads from there
            pos: int | None = self.data_offset
        else:
            pos = self.find_sync(self.start, self.end)
        while pos is not None and pos < self.size:
            if pos >= self.end and self._is_sync_point(pos) is not None:
                return
            item, next_pos = self._step(pos)
            if item is not None:
                yield item
                if self._rows_failed and isinstance(item, Block):
                    self._rows_failed = False
                    next_pos = self._after_bad_rows(item)
            if isinstance(item, BadRange) and item.offset >= self.end:
                return
            pos = next_pos

    def mark_rows_bad(self) -> None:
        """Tell the scan that the rows of the block just yielded did not decode (it resyncs if needed)."""
        self._rows_failed = True

    def _step(self, pos: int) -> tuple[Block | BadRange | None, int | None]:
        """Examine the bytes at ``pos``: (what is there, where to continue or None to stop)."""
        remaining = self.size - pos
        head = self.window.get(pos, FIXHEADER_SIZE)
        magic = head[:4]
        if magic == EOF_MAGIC:
            after = pos + 4
            if after < self.size:
                # Bytes after the EOF marker are one bad region; blocks after it are still read (as Tarantool's
                # xlog.pairs does), so every split agrees on what follows.
                err = CorruptDataError(self.path, after, f"{self.size - after} bytes after the EOF marker")
                return BadRange(after, err), self.find_sync(after, self.end)
            return None, None
        if remaining < 4:
            if any(m.startswith(magic) for m in (PLAIN_MAGIC, ZSTD_MAGIC, EOF_MAGIC)):
                log.info("%s: partial block at byte %d (file still being written?)", self.path, pos)
                return None, None
            return self._bad(pos, CorruptDataError(self.path, pos, "garbage at the end of the file"))
        if magic not in (PLAIN_MAGIC, ZSTD_MAGIC):
            return self._bad(pos, CorruptDataError(self.path, pos, f"no block magic (found {magic.hex()})"))
        if remaining < FIXHEADER_SIZE:
            log.info("%s: partial fixheader at byte %d (file still being written?)", self.path, pos)
            return None, None
        try:
            fix = parse_fixheader(head)
        except ValueError as exc:
            return self._bad(pos, CorruptDataError(self.path, pos, f"bad fixheader: {exc}"))
        if fix.length > MAX_BLOCK_BYTES:
            return self._bad(pos, CorruptDataError(self.path, pos, f"absurd block length {fix.length}"))
        block_end = pos + FIXHEADER_SIZE + fix.length
        if block_end > self.size:
            if not self._ends_with_eof() and self.find_sync(pos + 1, self.size) is None:
                log.info("%s: partial block at byte %d (file still being written?)", self.path, pos)
                return None, None
            return self._bad(
                pos, CorruptDataError(self.path, pos, f"block length {fix.length} runs past the end of the file")
            )
        stored = self.window.get(pos + FIXHEADER_SIZE, fix.length)
        if self.verify:
            actual = block_crc32c(stored)
            if actual != fix.crc32c:
                err = ChecksumError(
                    self.path, pos, f"block checksum mismatch: stored 0x{fix.crc32c:08x}, computed 0x{actual:08x}"
                )
                return self._bad(pos, err)
        if fix.compressed:
            try:
                payload = decompress_block(stored)
            except ValueError as exc:
                return self._bad(pos, CorruptDataError(self.path, pos, str(exc)))
        else:
            payload = stored
        return Block(pos, FIXHEADER_SIZE + fix.length, payload, fix.compressed), block_end

    def _after_bad_rows(self, block: Block) -> int | None:
        """Where to continue after a block whose rows failed to decode: its end when its checksum was
        verified (the framing is sound), else the next sync point."""
        if self.verify:
            return block.offset + block.size
        return self.find_sync(block.offset + 1, self.end)
