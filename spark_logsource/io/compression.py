"""Bounded decompression: every call has an explicit output cap and fails instead of allocating past it.

Raises the internal :class:`~spark_logsource.errors.DecodeError` (position 0: the compressed buffer's start);
the framer that called wraps it with the file path and offset.
"""

from __future__ import annotations

import zlib

import zstandard

from spark_logsource.errors import DecodeError

_READ_PIECE = 1 << 20
_ZSTD_INPUT_PIECE = 512  # bounds the output of one decompress call (≤ 128 KiB per 3-4 input bytes)


def zstd_frame(data: bytes | memoryview, limit: int) -> bytes:
    """Exactly one zstd frame (content size may be absent) → its bytes; nothing may follow the frame."""
    dobj = zstandard.ZstdDecompressor().decompressobj()
    out: list[bytes] = []
    total = 0
    view = memoryview(data)
    fed = 0
    try:
        while fed < len(view) and not dobj.eof:
            # as much input as cannot expand past what is left of the cap (3 bytes ≤ 128 KiB), 512 bytes at least
            piece = max(_ZSTD_INPUT_PIECE, 3 * ((limit - total) >> 17))
            chunk = dobj.decompress(view[fed : fed + piece])
            fed += piece
            total += len(chunk)
            if total > limit:
                raise DecodeError(0, f"zstd frame expands beyond {limit} bytes")
            out.append(chunk)
    except zstandard.ZstdError as exc:
        raise DecodeError(0, f"bad zstd frame: {exc}") from None
    if not dobj.eof:
        raise DecodeError(0, "zstd frame is truncated")
    if dobj.unused_data or fed < len(view):
        raise DecodeError(0, "bytes after the zstd frame")
    return b"".join(out)


def zstd_frames(data: bytes | memoryview, limit: int, expected_size: int | None = None) -> bytes:
    """One or more zstd frames back to back → their bytes, at most ``limit``.

    A truncated frame makes zstandard's stream reader stop early without an error, so the output length is
    checked against ``expected_size`` when the caller knows it (a declared uncompressed size).
    """
    if expected_size is not None and expected_size > limit:
        raise DecodeError(0, f"zstd payload declares {expected_size} bytes, over the cap {limit}")
    reader = zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
    parts: list[bytes] = []
    total = 0
    try:
        while True:
            chunk = reader.read(min(_READ_PIECE, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise DecodeError(0, f"zstd payload inflates beyond {limit} bytes")
    except zstandard.ZstdError as exc:
        raise DecodeError(0, f"zstd: {exc}") from None
    if expected_size is not None and total != expected_size:
        raise DecodeError(0, f"zstd payload inflates to {total} bytes, header says {expected_size}")
    return b"".join(parts)


def zlib_exact(data: bytes | memoryview, declared: int) -> bytes:
    """A zlib stream that must inflate to exactly ``declared`` bytes (the caller capped ``declared``)."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(bytes(data), declared + 1)
    except zlib.error as exc:
        raise DecodeError(0, f"zlib: {exc}") from None
    if len(out) != declared:
        raise DecodeError(0, f"compressed block inflates to {len(out)}{'+' if len(out) > declared else ''} bytes, "
                             f"header says {declared}")
    return out
