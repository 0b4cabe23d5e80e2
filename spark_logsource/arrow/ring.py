"""Two shared-memory slots through which the pipe worker hands Arrow batches to the JVM without copying them through
a pipe (``docs/spark-speed.md``, "The columnar JVM reader").

A batch written to a pipe is copied into the kernel's pipe pages (allocated and charged page by page), copied out
again by the JVM, and twice more inside the JVM before it is an Arrow buffer. Here the worker serializes each batch
in place into a memory file (``memfd_create``), and the pipe carries a line that says
where it is; the JVM maps the same file and copies the message once into its own buffers. Two files take turns, so
the worker writes the next batch while the JVM copies the last one.

The exchange, after the task's lines (``spark_logsource.arrow.pipe``):

- worker: ``ring PID FD0 FD1 SCHEMA_BYTES`` and the schema's IPC message; JVM: ``mapped`` (it opened both files
  through ``/proc/PID/fd``) or ``stream`` (it could not: the task is answered as an Arrow IPC stream instead);
- worker, per batch: ``batch SLOT LENGTH FILE_BYTES``: file ``SLOT`` (batch ``k`` uses slot ``k % 2``) holds, from
  offset 0, a one-batch Arrow IPC stream of ``LENGTH`` bytes (the schema's message, the batch's, the end marker), and
  the file holds at least ``FILE_BYTES``; JVM, once it has copied the batch: ``free``;
- the worker writes batch ``k >= 2`` only after the JVM's ``free`` for batch ``k - 2``, and ends the task with its
  status line (``ok ROWS`` or ``error ...``), then reads the ``free`` lines still owed.

Linux only (``memfd_create``); elsewhere the worker answers with a stream. No Spark import here.
"""

from __future__ import annotations

import logging
import mmap
import os
from typing import BinaryIO

import pyarrow as pa

from spark_logsource.arrow.batching import MAX_BATCH_BYTES

__all__ = ["BadAnswer", "Ring", "RingRefused", "ring_available"]

log = logging.getLogger(__name__)

#: Bytes of an Arrow IPC stream's end marker (continuation word and a zero length).
_END_MARKER_BYTES = 8
#: Above this, a slot's pages are given back after each task (:meth:`_Slot.release`).
KEPT_SLOT_BYTES = 64 << 20
#: Bytes each slot starts with; a larger batch grows its slot (a batch of typed rows is about a MiB).
FIRST_SLOT_BYTES = 4 << 20


def ring_available() -> bool:
    """Whether this system can make the memory files (Linux's ``memfd_create``)."""
    return hasattr(os, "memfd_create")


class RingRefused(Exception):
    """The JVM could not map the slots: the task is answered as a stream."""


class _Slot:
    __slots__ = ("fd", "map", "size")

    def __init__(self, index: int) -> None:
        self.fd = os.memfd_create(f"spark-logsource-batch-{index}")
        self.size = 0
        self.map: mmap.mmap | None = None
        self.ensure(FIRST_SLOT_BYTES)

    def ensure(self, size: int) -> None:
        """Grow the file (and its mapping) to hold ``size`` bytes: doubling up to the readers' batch cap, exactly
        above it (a single row over the cap is a batch of its own); the file never shrinks (see :meth:`release`)."""
        if size <= self.size:
            return
        if size <= MAX_BATCH_BYTES:
            size = min(max(size, 2 * self.size), MAX_BATCH_BYTES)
        os.ftruncate(self.fd, size)
        if self.map is not None:
            self.map.close()
        self.map = mmap.mmap(self.fd, size)
        self.size = size

    def release(self) -> None:
        """Give a large slot's pages back to the system between tasks (the file keeps its size, so a JVM that maps
        it never faults; the next batch written there takes fresh pages)."""
        if self.map is not None and self.size > KEPT_SLOT_BYTES:
            try:
                self.map.madvise(mmap.MADV_REMOVE)
            except OSError as exc:  # after the task's status: a worker that keeps the pages must not die of it
                log.debug("a slot keeps its pages: %s", exc)

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
        os.close(self.fd)


class Ring:
    """The worker's two slots, kept for every task it serves (made on the first task that asks for them)."""

    def __init__(self) -> None:
        self.slots = (_Slot(0), _Slot(1))
        self.written = 0
        self.owed = 0
        self.schema = pa.schema([])
        self.schema_bytes = 0

    def offer(self, schema: pa.Schema, source: BinaryIO, sink: BinaryIO) -> None:
        """Tell the JVM where the slots are and wait for its answer (RingRefused: it could not map them)."""
        message = schema.serialize()
        self.schema = schema
        self.schema_bytes = message.size
        fds = " ".join(str(s.fd) for s in self.slots)
        sink.write(f"ring {os.getpid()} {fds} {message.size}\n".encode() + message.to_pybytes())
        sink.flush()
        answer = source.readline()
        if answer == b"stream\n":
            raise RingRefused("the JVM could not map the worker's memory files")
        if answer != b"mapped\n":
            raise BadAnswer(f"the JVM answered the ring with {answer[:80]!r}")
        self.written = 0
        self.owed = 0

    def write(self, batch: pa.RecordBatch, source: BinaryIO, sink: BinaryIO) -> None:
        """Put ``batch`` in its slot (after the JVM freed the slot's last batch) and tell the JVM.

        The slot gets a whole one-batch Arrow IPC stream (schema, batch, end marker), written in place: Arrow has no
        call that serializes a lone batch into a given buffer, and the schema's few bytes are cheaper than a copy of
        the batch."""
        if self.written >= 2:
            self._take_free(source)
        slot = self.slots[self.written % 2]
        slot.ensure(self.schema_bytes + pa.ipc.get_record_batch_size(batch) + _END_MARKER_BYTES)
        assert slot.map is not None
        target = pa.py_buffer(slot.map)
        out = pa.FixedSizeBufferWriter(target)
        # the offered schema, not the batch's: the writer refuses a batch of another schema, as the stream does
        with pa.ipc.new_stream(out, self.schema) as writer:
            writer.write_batch(batch)
        length = out.tell()
        del out, target, writer  # no view of the map may outlive this call: growing the slot closes it
        sink.write(f"batch {self.written % 2} {length} {slot.size}\n".encode())
        sink.flush()
        self.written += 1
        self.owed += 1

    def settle(self, source: BinaryIO) -> None:
        """After the status line: read the ``free`` lines the JVM still owes, so the next task starts in step; then
        give back the pages of a slot a large batch grew."""
        while self.owed:
            self._take_free(source)
        for slot in self.slots:
            slot.release()

    def _take_free(self, source: BinaryIO) -> None:
        answer = source.readline()
        if answer != b"free\n":
            raise BadAnswer(f"the JVM answered a batch with {answer[:80]!r}")
        self.owed -= 1

    def close(self) -> None:
        for slot in self.slots:
            slot.close()


class BadAnswer(Exception):
    """The JVM wrote something the ring's exchange does not have (it went away, or a bug): the worker stops."""
