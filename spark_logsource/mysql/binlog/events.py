"""Framing of a binlog file into events: magic, FORMAT_DESCRIPTION_EVENT, event_size walk, CRC32, resync.

The file is ``fe 62 69 6e`` then v4 events (``docs/formats/mysql-binlog.md`` "Walking events and resync"; mysql-server
``libs/mysql/binlog/event/binlog_event.h``). Events are walked by ``event_size`` (never ``log_pos``, which is 0
inside TRANSACTION_PAYLOAD and for MariaDB 11 in-transaction events). Plain files are read through a bounded
window (one chunk, or one event when an event is larger), so memory does not grow with the file; ``.gz`` files
are inflated whole, with a cap on the inflated size.

An event is accepted when its size fits (19 bytes + CRC <= size <= min(MAX_EVENT_SIZE, bytes left)) and
either its CRC32 matches (files with ``binlog_checksum=CRC32``, when checksums are verified) or, without a CRC
to check, its ``log_pos`` is 0 or ``pos + size`` (an unknown type must have the exact ``log_pos``). Otherwise
the walk reports a :class:`~spark_logsource.framing.BadRange` and resynchronises at the next offset where a
*candidate* header validates (:meth:`BinlogFile.is_candidate`: known type or the IGNORABLE flag, plausible size,
``log_pos``, CRC).
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_logsource.errors import ChecksumError, CorruptDataError, TruncatedDataError, UnsupportedDataError
from spark_logsource.framing import BadRange
from spark_logsource.io.fs import base_name
from spark_logsource.io.window import READ_CHUNK, Window, source_size
from spark_logsource.mysql.binlog import checksum
from spark_logsource.mysql.binlog.checksum import CRC_LEN, event_crc_ok
from spark_logsource.mysql.binlog.event_types import (
    EVENT_TYPE_NAMES,
    FLAG_IGNORABLE,
    FORMAT_DESCRIPTION,
    ROWS_TYPES,
    TABLE_MAP,
    UNKNOWN,
)
from spark_logsource.mysql.binlog.fde import (
    BINLOG_MAGIC,
    MAX_FDE_SIZE,
    FormatDescription,
    decode_fde,
    detect_old_format,
)
from spark_logsource.mysql.binlog.header import HEADER_LEN, unpack_header

__all__ = ["MAX_EVENT_SIZE", "BadRange", "BinlogEvent", "BinlogFile", "Resume"]

log = logging.getLogger(__name__)

#: MySQL's max_allowed_packet maximum (1 GiB) plus headers: no server writes a larger event.
MAX_EVENT_SIZE = (1 << 30) + 4096
#: Inflated size cap for ``.gz`` binlogs (they are read whole).
DEFAULT_MAX_GZ_SIZE = 4 << 30
_CHUNK = READ_CHUNK
_GZIP_MAGIC = b"\x1f\x8b"
_KNOWN = frozenset(code for code in EVENT_TYPE_NAMES if code != UNKNOWN)
_KNOWN_TYPES = np.zeros(256, dtype=bool)
_KNOWN_TYPES[sorted(_KNOWN)] = True
#: Offsets screened per step of :meth:`BinlogFile.resync` (the first step, then at most).
_FIRST_SCAN_WINDOW = 64 << 10
_SCAN_WINDOW = 1 << 20


#: The events a rows event follows: its TABLE_MAP, or the rows event before it.
_ROWS_CONTEXT = ROWS_TYPES | {TABLE_MAP}


@dataclass(slots=True)
class BinlogEvent:
    """One event. ``body`` excludes the 19-byte header and the CRC trailer.

    Events from inside a TRANSACTION_PAYLOAD have the payload event's ``pos``/``next_pos`` and an
    ``inner_index`` (0, 1, ...); their own ``event_size`` and ``log_pos`` (0) are kept as written.
    """

    pos: int
    next_pos: int
    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int
    body: bytes
    inner_index: int | None = None


class Resume:
    """Where a walk in progress goes on: a consumer that read some events itself (:mod:`.encode.runs`) sets ``at`` to
    the offset after them, and the walk resumes there instead of at the next event."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: int | None = None


def inflate_gzip(stream: Any, path: str, max_size: int) -> tuple[bytes, CorruptDataError | None]:
    """Inflate a whole gzip stream (all members) with at most ``max_size`` output bytes.

    A damaged or truncated gzip keeps what inflated before the damage and returns the error beside it, so the
    events before the damage are still read (the last one then shows up as truncated).
    """
    stream.seek(0)
    out = bytearray()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    in_member = False
    consumed = 0
    while True:
        chunk = bytes(stream.read(_CHUNK))
        if not chunk:
            break
        data = chunk
        while data:
            in_member = True
            try:
                piece = inflater.decompress(data, max_size + 1 - len(out))
            except zlib.error as exc:
                return bytes(out), CorruptDataError(path, consumed, f"gzip: {exc}")
            out += piece
            if len(out) > max_size:
                raise UnsupportedDataError(path, 0, f"gzip binlog inflates beyond {max_size} bytes (the cap for "
                                                    ".gz files, which are read whole)")
            if inflater.eof:
                data = inflater.unused_data
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                in_member = False
            else:
                data = inflater.unconsumed_tail
        consumed += len(chunk)
    if in_member:
        return bytes(out), TruncatedDataError(path, consumed, "the gzip stream ends inside a member")
    return bytes(out), None


def is_gzip(source: Any, path: str) -> bool:
    """Whether the binlog is gzipped: by its magic bytes (``1f 8b``) or, as mysqlbinlog users name them, ``.gz``.

    Leaves ``source`` at offset 0.
    """
    source.seek(0)
    head = bytes(source.read(2))
    source.seek(0)
    return head == _GZIP_MAGIC or base_name(path).endswith(".gz")


class BinlogFile:
    """An opened binlog: its FDE and an event walk from any offset.

    ``source`` is a seekable binary file (a ``pyarrow.NativeFile`` or a Python file object), bytes, or None (the
    file ``path`` is opened). Files whose name ends with ``.gz`` (or that start with the gzip magic) are
    inflated whole.
    """

    def __init__(self, source: Any, path: str, *, verify_checksums: bool = True,
                 max_gz_size: int = DEFAULT_MAX_GZ_SIZE) -> None:
        self.path = path
        self.verify_checksums = verify_checksums
        self.gzip_error: CorruptDataError | None = None
        self._owned = None
        if source is None:
            source = self._owned = open(path, "rb")  # noqa: SIM115 - closed in close()
        try:
            if isinstance(source, bytes | bytearray | memoryview):
                source = io.BytesIO(bytes(source))
            self.is_gzip = is_gzip(source, path)
            if self.is_gzip:
                data, self.gzip_error = inflate_gzip(source, path, max_gz_size)
                source = io.BytesIO(data)
                if self.gzip_error is not None:
                    log.warning("%s", self.gzip_error)
            self.size = source_size(source)
            self._window = Window(source, self.size)
            self.fde: FormatDescription = self._read_head()
        except BaseException:
            self.close()
            raise
        self.first_event_pos = 4 + self.fde.size
        self.crc_len = CRC_LEN if self.fde.has_checksums else 0

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> BinlogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- head ---------------------------------------------------------------------------------------------------
    def _read_head(self) -> FormatDescription:
        head = self._window.get(0, 4 + HEADER_LEN)
        if len(head) < 4 or head[:4] != BINLOG_MAGIC:
            if self.gzip_error is not None:
                raise self.gzip_error
            raise CorruptDataError(self.path, 0, f"not a binlog: the file starts with {head[:4].hex() or 'nothing'}"
                                                 f", not the magic fe62696e")
        detect_old_format(head, self.path)
        if len(head) < 4 + HEADER_LEN:
            raise TruncatedDataError(self.path, 4, "the file ends inside the FORMAT_DESCRIPTION_EVENT header")
        header = unpack_header(head, 4)
        size = header[3]
        if header[1] != FORMAT_DESCRIPTION:
            raise CorruptDataError(self.path, 4, f"expected a FORMAT_DESCRIPTION_EVENT at offset 4, found event "
                                                 f"type {header[1]}")
        if not HEADER_LEN < size <= MAX_FDE_SIZE:
            raise CorruptDataError(self.path, 4, f"FORMAT_DESCRIPTION_EVENT size {size} is implausible")
        event = self._window.get(4, size)
        if len(event) < size:
            raise TruncatedDataError(self.path, 4, f"FORMAT_DESCRIPTION_EVENT of {size} bytes, "
                                                   f"{len(event)} in the file")
        fde = decode_fde(event, path=self.path, offset=4)
        # The FDE carries a CRC whenever the server writes the checksum_alg byte, even with alg OFF.
        from spark_logsource.mysql.binlog.fde import server_has_checksum_byte

        if self.verify_checksums and server_has_checksum_byte(fde.server_version) and not event_crc_ok(event):
            raise ChecksumError(self.path, 4, "CRC32 of the FORMAT_DESCRIPTION_EVENT does not match")
        return fde

    # -- validation ---------------------------------------------------------------------------------------------
    def _header_at(self, pos: int) -> tuple[Any, ...] | None:
        raw = self._window.get(pos, HEADER_LEN)
        if len(raw) < HEADER_LEN:
            return None
        return unpack_header(raw, 0)

    def is_candidate(self, pos: int, *, depth: int = 1) -> bool:
        """Whether a valid event header starts at ``pos`` (for resync and split alignment).

        Known type (or IGNORABLE flag), plausible size, ``log_pos == pos + size`` when not 0, and the CRC when the
        file has checksums; with ``log_pos == 0`` the next header must validate too (checked first: row data is
        full of zeros, and a false header there may claim tens of megabytes whose CRC would be read for nothing).
        """
        header = self._header_at(pos)
        if header is None:
            return False
        _ts, type_code, _sid, size, log_pos, flags = header
        if type_code not in _KNOWN and not flags & FLAG_IGNORABLE:
            return False
        if type_code == FORMAT_DESCRIPTION:
            return False
        if size < HEADER_LEN + self.crc_len or size > MAX_EVENT_SIZE or pos + size > self.size:
            return False
        end = pos + size
        if log_pos != 0 and log_pos != end & 0xFFFFFFFF:
            return False
        if log_pos == 0 and end < self.size and depth > 0 and not self.is_candidate(end, depth=depth - 1):
            return False
        return not self.crc_len or self._crc_ok_at(pos, size)

    def _crc_ok_at(self, pos: int, size: int) -> bool:
        """The CRC test of the event ``[pos, pos + size)``: through the window when it fits one chunk, else read a
        chunk at a time beside it, so a candidate claiming a huge size never costs a buffer of that size."""
        if size <= _CHUNK:
            return event_crc_ok(self._window.get(pos, size))
        stream = self._window.source
        stream.seek(pos)
        crc, left = 0, size - CRC_LEN
        while left > 0:
            chunk = stream.read(min(left, _CHUNK))
            if not chunk:
                return False
            crc = checksum.crc32(chunk, crc)
            left -= len(chunk)
        return int.from_bytes(bytes(stream.read(CRC_LEN)), "little") == crc

    def resync(self, pos: int, limit: int | None = None) -> int:
        """The first offset >= ``pos`` (and < ``limit``) where :meth:`is_candidate` holds, else the file size.

        Offsets are screened a window at a time with the header-only conditions of :meth:`is_candidate` (numpy,
        over every offset at once); only the offsets that pass them get the full check.
        """
        stop = self.size if limit is None else min(limit, self.size)
        window = _FIRST_SCAN_WINDOW  # a good header is usually near: screen a little first, then more
        while pos < stop:
            n = min(window, stop - pos)
            for candidate in self._plausible_headers(pos, n):
                if self.is_candidate(candidate):
                    return candidate
            pos += n
            window = min(window * 4, _SCAN_WINDOW)
        return self.size

    def _plausible_headers(self, pos: int, n: int) -> list[int]:
        """Offsets in ``[pos, pos + n)`` whose 19 bytes pass is_candidate's header checks (type, size, log_pos)."""
        avail = min(n + HEADER_LEN - 1, self.size - pos)
        if avail < HEADER_LEN:
            return []
        stream = self._window.source
        stream.seek(pos)
        raw = np.frombuffer(bytes(stream.read(avail)), dtype=np.uint8)
        m = len(raw) - HEADER_LEN + 1
        if m <= 0:
            return []

        def u32(at: int) -> np.ndarray:
            b = [raw[at + k:at + k + m].astype(np.int64) for k in range(4)]
            return b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24

        types = raw[4:4 + m]
        ok = (_KNOWN_TYPES[types] | (raw[17:17 + m] & FLAG_IGNORABLE).astype(bool)) & (types != FORMAT_DESCRIPTION)
        size = u32(9)
        log_pos = u32(13)
        offsets = np.arange(pos, pos + m, dtype=np.int64)
        end = offsets + size
        ok &= (size >= HEADER_LEN + self.crc_len) & (size <= MAX_EVENT_SIZE) & (end <= self.size)
        ok &= (log_pos == 0) | (log_pos == (end & 0xFFFFFFFF))
        found: list[int] = offsets[ok].tolist()
        return found

    # -- the walk -----------------------------------------------------------------------------------------------
    def _check(self, pos: int) -> tuple[tuple[Any, ...] | None, CorruptDataError | None]:
        """The header at ``pos`` when the event there is acceptable, else the error."""
        left = self.size - pos
        if left < HEADER_LEN:
            return None, TruncatedDataError(self.path, pos, f"the file ends {left} bytes into an event header")
        header = self._header_at(pos)
        assert header is not None  # left >= HEADER_LEN: the window has the 19 bytes
        _ts, type_code, _sid, size, log_pos, flags = header
        if size < HEADER_LEN + self.crc_len:
            return None, CorruptDataError(self.path, pos, f"event size {size} is smaller than its header")
        if size > MAX_EVENT_SIZE:
            return None, CorruptDataError(self.path, pos, f"event size {size} is over the 1 GiB maximum")
        if size > left:
            return None, TruncatedDataError(self.path, pos, f"event of {size} bytes, only {left} left in the file")
        if self.crc_len and self.verify_checksums:
            return header, None  # the CRC is checked on the event bytes by the caller
        if log_pos != 0 and log_pos != (pos + size) & 0xFFFFFFFF:
            return None, CorruptDataError(self.path, pos, f"log_pos {log_pos} is not the end of the event "
                                                          f"({pos + size}): bad event size or header")
        if type_code not in _KNOWN and not flags & FLAG_IGNORABLE and log_pos == 0:
            return None, CorruptDataError(self.path, pos, f"unknown event type {type_code} without a log_pos")
        return header, None

    def window(self) -> tuple[bytes, int]:
        """The walk's current buffer and the file offset of its first byte."""
        return self._window.data, self._window.start

    def events(self, start: int | None = None, stop: int | None = None,
               resume: Resume | None = None, only: frozenset[int] | None = None, step_over: bool = True,
               ) -> Iterator[BinlogEvent | BadRange]:
        """Walk the events from ``start`` (default: the first after the FDE) to ``stop`` / the end.

        The FDE itself is yielded first when ``start`` is at or before offset 4. Events are yielded while their
        ``pos`` < ``stop``; the caller may stop consuming at any time. After an event, the walk goes on at
        ``resume.at`` when the caller set it (it read the events up to there itself).

        ``only``: yield the events of these types alone (and the :class:`BadRange` of every bad region). A
        rows event that is not asked for, the bulk of a binlog's bytes, is stepped over by its header, without
        its CRC or a copy of its body, when the header frames it on its own and sits where a rows event belongs:
        a plausible size, a ``log_pos`` that is its end (what servers write in their binlog files), and right
        after a TABLE_MAP or another rows event. Any other event takes the checked path: one whose ``log_pos``
        is 0 or another server's position (relay logs), whose size or position field is damaged, or whose type
        byte was damaged into a rows type (a DDL statement follows a GTID or a commit, not a TABLE_MAP). Damage
        inside a body stepped over is left to the readers of that event. ``step_over=False``: every event is
        checked (CRC or ``log_pos``) as without ``only``, which then only says which are yielded (a look-ahead that
        must stop at damage as the walk would, without a copy of each body it passes).
        """
        pos = self.first_event_pos if start is None else start
        end = self.size if stop is None else min(stop, self.size)
        if pos <= 4:
            if only is None or FORMAT_DESCRIPTION in only:
                event = self._window.get(4, self.fde.size)
                h = unpack_header(event, 0)
                yield BinlogEvent(4, 4 + self.fde.size, h[0], h[1], h[2], h[3], h[4], h[5],
                                  bytes(event[HEADER_LEN:len(event) - self.crc_len]))
            pos = self.first_event_pos
        crc_len = self.crc_len
        verify = crc_len and self.verify_checksums
        window = self._window
        view_of: bytes = b""
        view = memoryview(view_of)
        previous = None  # type of the event before pos, when the walk accepted it
        header: tuple[Any, ...] | None
        while pos < end:
            if only is not None and step_over and previous in _ROWS_CONTEXT:
                off = pos - window.start
                header = unpack_header(window.data, off) if 0 <= off <= len(window.data) - HEADER_LEN else \
                    self._header_at(pos)
                if header is not None and header[1] in ROWS_TYPES and header[1] not in only:
                    size = header[3]
                    if (HEADER_LEN + crc_len <= size <= MAX_EVENT_SIZE and pos + size <= self.size
                            and header[4] == (pos + size) & 0xFFFFFFFF):
                        pos += size
                        previous = header[1]
                        continue
            previous = None
            if verify:
                # The common case without a call per check: the whole event is in the window's buffer, and it passes
                # what _check and the CRC test below accept; anything else takes the general path (and its errors).
                buf = window.data
                off = pos - window.start
                if 0 <= off <= len(buf) - HEADER_LEN:
                    header = unpack_header(buf, off)
                    size = header[3]
                    stop = off + size
                    if buf is not view_of:
                        view_of, view = buf, memoryview(buf)
                    if (HEADER_LEN + CRC_LEN <= size <= MAX_EVENT_SIZE and stop <= len(buf)
                            and header[1] != FORMAT_DESCRIPTION
                            and checksum.crc32(view[off:stop - CRC_LEN]) == int.from_bytes(
                                view[stop - CRC_LEN:stop], "little")):
                        if only is None or header[1] in only:
                            yield BinlogEvent(pos, pos + size, header[0], header[1], header[2], size, header[4],
                                              header[5], buf[off + HEADER_LEN:stop - CRC_LEN])
                        previous = header[1]
                        pos += size
                        if resume is not None and resume.at is not None:
                            pos, resume.at = resume.at, None
                        continue
            header, error = self._check(pos)
            if header is not None:
                size = header[3]
                event = self._window.get(pos, size)
                if verify and not event_crc_ok(event):
                    error = ChecksumError(self.path, pos, f"CRC32 mismatch in a {size}-byte event of type "
                                                          f"{header[1]}")
                else:
                    if only is None or header[1] in only:
                        yield BinlogEvent(pos, pos + size, header[0], header[1], header[2], size, header[4],
                                          header[5], event[HEADER_LEN:size - crc_len])
                    previous = header[1]
                    pos += size
                    if resume is not None and resume.at is not None:
                        pos, resume.at = resume.at, None
                    continue
            assert error is not None
            good = self.resync(pos + 1)
            yield BadRange(pos, error, good)
            pos = good
