"""Cut rows into Arrow-sized batches: at most ``batch_size`` rows and at most ``max_bytes`` of variable-width data.

Every format builds its output from *chunks*: runs of rows decoded together (the rows of one Tarantool block,
of one binlog rows event, one corrupt-record row). Arrow's ``string`` and ``binary`` columns hold less than
2 GiB per array, so a batch of 8192 rows of 300 KiB tuples would overflow one; the byte cap keeps every batch
far below that. A chunk larger than what is left of a batch is split at row boundaries; a single row larger
than the cap still forms a batch of its own (it fits Arrow: one value is bounded by the framers' caps).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np

#: Variable-width bytes (strings, binaries, Variant values and metadata) in one output batch at most.
MAX_BATCH_BYTES = 256 << 20


class Chunk(Protocol):
    """Rows decoded together; ``size`` is the variable-width bytes they put into a batch."""

    n: int
    size: int

    def row_bytes(self) -> Sequence[int] | np.ndarray:
        """The variable-width bytes of each row (``sum == size``): a list, or an int64 array."""
        ...

    def rows(self, lo: int, hi: int) -> Chunk:
        """The chunk of rows ``lo`` .. ``hi - 1``."""
        ...


C = TypeVar("C", bound=Chunk)


def cut_batches(chunks: Iterable[C], batch_size: int, max_bytes: int = MAX_BATCH_BYTES) -> Iterator[list[C]]:
    """Group ``chunks`` (in order, splitting where needed) into batches within both limits; none is empty."""
    group: list[C] = []
    rows = size = 0
    for chunk in chunks:
        if not chunk.n:
            continue
        if rows + chunk.n <= batch_size and size + chunk.size <= max_bytes:
            group.append(chunk)
            rows += chunk.n
            size += chunk.size
            continue
        # where each row ends, in bytes from the chunk's start: the rows that fit are found by bisection, not
        # one Python step per row (a run of rows events is a chunk of up to 16384 rows)
        ends = np.cumsum(np.asarray(chunk.row_bytes(), dtype=np.int64))
        lo = 0
        while lo < chunk.n:
            before = int(ends[lo - 1]) if lo else 0
            # as many of this chunk's rows as fit the current batch: at least one row per batch
            hi = min(chunk.n, lo + batch_size - rows, int(np.searchsorted(ends, before + max_bytes - size, "right")))
            if hi <= lo:
                if group:  # the batch is full
                    yield group
                    group, rows, size = [], 0, 0
                    continue
                hi = lo + 1  # one row larger than the byte cap: a batch of its own
            group.append(chunk if lo == 0 and hi == chunk.n else chunk.rows(lo, hi))  # type: ignore[arg-type]
            rows += hi - lo
            size += int(ends[hi - 1]) - before
            lo = hi
    if group:
        yield group


class ChunkBuffer(Generic[C]):
    """Chunks waiting to become batches, with their row and byte totals (to know when a batch is due)."""

    def __init__(self, batch_size: int, max_bytes: int = MAX_BATCH_BYTES) -> None:
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self.chunks: list[C] = []
        self.rows = 0
        self.bytes = 0

    def add(self, chunk: C) -> None:
        if chunk.n:
            self.chunks.append(chunk)
            self.rows += chunk.n
            self.bytes += chunk.size

    def full(self) -> bool:
        return self.rows >= self.batch_size or self.bytes >= self.max_bytes

    def take(self) -> Iterator[list[C]]:
        """Everything buffered, cut into batches; the buffer is empty afterwards."""
        chunks, self.chunks, self.rows, self.bytes = self.chunks, [], 0, 0
        return cut_batches(chunks, self.batch_size, self.max_bytes)
