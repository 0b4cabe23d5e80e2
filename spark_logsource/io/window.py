"""Random access to a seekable file through one bounded buffer, shared by every file framer."""

from __future__ import annotations

from typing import Any

#: Bytes read ahead per refill (a framer asking for more gets exactly what it asked for).
READ_CHUNK = 1 << 20


def source_size(source: Any) -> int:
    """Byte size of a seekable source (pyarrow NativeFile or Python binary file)."""
    size = getattr(source, "size", None)
    if callable(size):
        return int(size())
    here = source.tell()
    end = source.seek(0, 2)
    if end is None:
        end = source.tell()
    source.seek(here)
    return int(end)


class Window:
    """Reads ``[pos, pos + n)`` of ``source`` through one buffer of at most ``max(READ_CHUNK, n)`` bytes.

    A framer asks for headers and payloads by absolute position; consecutive small reads are served from the
    buffer. If the file turns out shorter than ``size`` (it shrank under us), ``size`` is lowered to what is there.
    """

    def __init__(self, source: Any, size: int, read_chunk: int = READ_CHUNK) -> None:
        self.source = source
        self.size = size
        self.read_chunk = read_chunk
        self.start = 0
        self.data = b""

    def get(self, pos: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``pos`` (fewer only at the end of the file)."""
        n = max(0, min(n, self.size - pos))
        rel = pos - self.start
        if rel >= 0 and rel + n <= len(self.data):
            return self.data[rel : rel + n]
        self.source.seek(pos)
        want = min(max(n, self.read_chunk), self.size - pos)
        parts: list[bytes] = []
        got = 0
        while got < want:
            chunk = self.source.read(want - got)
            if not chunk:
                break
            parts.append(bytes(chunk))
            got += len(chunk)
        self.start = pos
        self.data = b"".join(parts)
        if len(self.data) < n:
            self.size = pos + len(self.data)
            n = len(self.data)
        return self.data[:n]
