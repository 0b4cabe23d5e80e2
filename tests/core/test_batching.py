"""Batches within both limits, in order, nothing lost or repeated, whatever the chunk sizes."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from spark_logsource.arrow.batching import ChunkBuffer, cut_batches


@dataclass
class Rows:
    """A chunk of rows named by their global numbers, each with a byte size."""

    ids: list[int]
    sizes: list[int]

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def size(self) -> int:
        return sum(self.sizes)

    def row_bytes(self) -> list[int]:
        return list(self.sizes)

    def rows(self, lo: int, hi: int) -> Rows:
        return Rows(self.ids[lo:hi], self.sizes[lo:hi])


chunk_sizes = st.lists(st.lists(st.integers(0, 5000), max_size=40), max_size=30)


@given(chunk_sizes, st.integers(1, 50), st.integers(1, 20000))
def test_cut_keeps_order_and_limits(sizes: list[list[int]], batch_size: int, max_bytes: int) -> None:
    chunks, next_id = [], 0
    for row_sizes in sizes:
        chunks.append(Rows(list(range(next_id, next_id + len(row_sizes))), row_sizes))
        next_id += len(row_sizes)
    batches = list(cut_batches(chunks, batch_size, max_bytes))
    assert [i for batch in batches for c in batch for i in c.ids] == list(range(next_id))
    for batch in batches:
        rows = sum(c.n for c in batch)
        assert 0 < rows <= batch_size
        # over the byte cap only as a single row that alone exceeds it
        assert sum(c.size for c in batch) <= max_bytes or rows == 1


def _greedy(sizes: list[int], batch_size: int, max_bytes: int) -> list[list[int]]:
    """The batches row by row: a row joins the current batch unless it would pass a limit (or the batch is empty)."""
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for row, size in enumerate(sizes):
        if current and (len(current) + 1 > batch_size or total + size > max_bytes):
            batches.append(current)
            current, total = [], 0
        current.append(row)
        total += size
    return [*batches, current] if current else batches


@given(chunk_sizes, st.integers(1, 50), st.integers(1, 20000))
def test_cut_fills_each_batch_as_far_as_the_limits_allow(sizes: list[list[int]], batch_size: int,
                                                         max_bytes: int) -> None:
    chunks, next_id = [], 0
    for row_sizes in sizes:
        chunks.append(Rows(list(range(next_id, next_id + len(row_sizes))), row_sizes))
        next_id += len(row_sizes)
    batches = [[i for c in batch for i in c.ids] for batch in cut_batches(chunks, batch_size, max_bytes)]
    assert batches == _greedy([b for row_sizes in sizes for b in row_sizes], batch_size, max_bytes)


def test_buffer_is_full_at_either_limit_and_empty_after_take() -> None:
    buffer = ChunkBuffer(batch_size=10, max_bytes=100)
    buffer.add(Rows([0, 1], [30, 30]))
    assert not buffer.full()
    buffer.add(Rows([2], [40]))
    assert buffer.full()
    assert [[c.ids for c in b] for b in buffer.take()] == [[[0, 1], [2]]]
    assert buffer.rows == buffer.bytes == 0 and not buffer.chunks
