"""Misbehaving Python workers for the columnar JVM reader's tests (``tests/spark/test_columnar.py``).

A JVM task runs one of ``python -m tests.support.lying_pipe.lie`` / ``.die`` / ``.silent`` (the test's session
runs from the repository's root, so ``tests`` is importable). Each one breaks the protocol of
:mod:`spark_logsource.arrow.pipe` in one way the JVM must not take for a whole split: a status that claims more
rows than were sent, a stream cut short by the worker's death, a silent exit, a batch whose string offsets point
past its data (``.stray``: Spark's own Arrow accessor would read beyond the buffer), a batch said to lie beyond the
shared-memory file it is in (``.overrun``), a batch whose first field node claims a null it has no validity bitmap
for (``.nullslie``: Arrow's loader would make every row null), a stream whose first message claims 0.9 GB of
metadata (``.hugemeta``: Arrow would allocate it before reading). ``.fakering`` offers a ring of files that are not
memory files: the JVM must refuse it, and the worker then answers with a stream, as a worker whose ring cannot be
mapped does.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import Any, BinaryIO, Literal

import pyarrow as pa

from spark_logsource.arrow import pipe
from spark_logsource.arrow.ring import Ring

#: Every module of this package, for the static setting that lets the JVM run them
#: (``spark.logsource.arrowPipe.extraModules``, set by the test session: tests/conftest.py).
MODES = ("lie", "die", "silent", "stray", "overrun", "fakering", "nullslie", "hugemeta")
MODULES = ",".join(f"tests.support.lying_pipe.{mode}" for mode in MODES)


def ring_lies(mode: str, source: BinaryIO, sink: BinaryIO, format_line: bytes, split_line: bytes,
              columns: list[str]) -> int:
    """``overrun``: a true ring offer, then a batch said to end past its file. ``fakering``: an offer of the
    worker's stdin and stderr, which the JVM must refuse; then the task's rows as a stream, and a true status."""
    transport = source.readline()
    fmt, split = pipe.decode_task(format_line.decode().strip(), split_line.decode().strip())
    schema = pipe.projected(fmt.schema(), columns)
    if mode == "nullslie" and transport == b"stream\n":  # the same lie in a stream
        batch = next(b for b in fmt.read_split(split) if b.num_rows).select(columns)
        out = pa.BufferOutputStream()
        with pa.ipc.new_stream(out, schema) as writer:
            writer.write_batch(batch)
        stream = bytearray(out.getvalue().to_pybytes())
        claim_a_null(stream, schema.serialize().size, batch.num_rows)
        sink.write(bytes(stream) + f"ok {batch.num_rows}\n".encode())
        sink.flush()
        return 0
    assert transport == b"ring\n"
    if mode == "overrun":
        ring_ = Ring()
        ring_.offer(schema, source, sink)
        sink.write(f"batch 0 64 {ring_.slots[0].size + 4096}\n".encode())
        sink.flush()
        source.readline()  # the JVM ends the task: stdin closes
        return 0
    if mode == "nullslie":
        ring_ = Ring()
        ring_.offer(schema, source, sink)
        batch = next(b for b in fmt.read_split(split) if b.num_rows).select(columns)
        slot = ring_.slots[0]
        assert slot.map is not None
        real_write = sink.write

        def lying_write(data: bytes) -> int:  # the batch line goes out once its first field node lies
            if data.startswith(b"batch "):
                claim_a_null(slot.map, ring_.schema_bytes, batch.num_rows)  # type: ignore[arg-type]
            return real_write(data)

        sink.write = lying_write  # type: ignore[method-assign]
        ring_.write(batch, source, sink)
        source.readline()
        return 0
    message = schema.serialize()
    sink.write(f"ring {os.getpid()} 0 2 {message.size}\n".encode() + message.to_pybytes())
    sink.flush()
    if source.readline() != b"stream\n":
        return 3
    rows = 0
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in fmt.read_split(split):
            if batch.num_rows:
                writer.write_batch(batch.select(columns))
                rows += batch.num_rows
    sink.write(f"ok {rows}\n".encode())
    sink.flush()
    return 0


def claim_a_null(slot: Any, schema_bytes: int, rows: int) -> None:
    """In the one-batch stream at the start of ``slot``: the batch message's first field node (``rows`` values, no
    null) made to say one null; its column keeps no validity bitmap."""
    start = schema_bytes + 8  # the batch message: continuation word, metadata length, then its metadata
    (metadata_length,) = struct.unpack_from("<i", slot, schema_bytes + 4)
    metadata = bytes(slot[start:start + metadata_length])
    at = start + metadata.index(struct.pack("<qq", rows, 0))
    slot[at + 8:at + 16] = struct.pack("<q", 1)


def stray_offsets(batch: pa.RecordBatch) -> bytes:
    """``batch`` as an Arrow IPC stream whose first string column's last offset points 1 GiB past its data: the
    stream is written whole, then the offsets are changed in its bytes (Arrow refuses to build such an array)."""
    name = next(f.name for f in batch.schema if f.type == pa.string())
    column = pa.concat_arrays([batch.column(name)])  # fresh buffers, offsets from 0
    offsets = column.buffers()[1]
    assert offsets is not None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch.set_column(batch.schema.get_field_index(name), name, column))
    stream = bytearray(sink.getvalue().to_pybytes())
    original = offsets.to_pybytes()[:4 * (len(column) + 1)]
    at = stream.index(original)
    stream[at + len(original) - 4:at + len(original)] = (1 << 30).to_bytes(4, "little")
    return bytes(stream)


def main(mode: Literal["lie", "die", "silent", "stray", "overrun", "fakering", "nullslie", "hugemeta"]) -> int:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    format_line, split_line = source.readline(), source.readline()
    columns = [c for c in source.readline().decode().rstrip("\n").split("\t") if c]
    if mode in ("overrun", "fakering", "nullslie"):
        return ring_lies(mode, source, sink, format_line, split_line, columns)
    fmt, split = pipe.decode_task(format_line.decode().strip(), split_line.decode().strip())
    schema = pipe.projected(fmt.schema(), columns)
    batches = [b.select(columns) for b in fmt.read_split(split) if b.num_rows]
    if mode == "silent":  # exits before writing anything
        return 0
    if mode == "hugemeta":  # a continuation word, then a length no batch's metadata has
        sink.write(b"\xff\xff\xff\xff" + struct.pack("<i", 900_000_000) + bytes(64) + b"ok 0\n")
        sink.flush()
        return 0
    if mode == "stray":
        sink.write(stray_offsets(batches[0]))
        sink.write(f"ok {batches[0].num_rows}\n".encode())
        sink.flush()
        return 0
    writer = pa.ipc.new_stream(sink, schema)
    writer.write_batch(batches[0])
    if mode == "die":  # dies mid-stream: no end marker, no status
        sink.flush()
        os._exit(9)
    writer.close()
    sink.write(f"ok {batches[0].num_rows + 1}\n".encode())  # "lie": one row more than sent
    sink.flush()
    return 0
