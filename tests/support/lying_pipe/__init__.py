"""Misbehaving Python workers for the columnar JVM reader's tests (``tests/spark/test_columnar.py``).

A JVM task runs one of ``python -m tests.support.lying_pipe.lie`` / ``.die`` / ``.silent`` (the test's session
runs from the repository's root, so ``tests`` is importable). Each one breaks the protocol of
:mod:`spark_logsource.arrow.pipe` in one way the JVM must not take for a whole split: a status that claims more
rows than were sent, a stream cut short by the worker's death, a silent exit, a batch whose string offsets point
past its data (``.stray``: Spark's own Arrow accessor would read beyond the buffer).
"""

from __future__ import annotations

import os
import sys
from typing import Literal

import pyarrow as pa

from spark_logsource.arrow import pipe

#: Every module of this package, for the static setting that lets the JVM run them
#: (``spark.logsource.arrowPipe.extraModules``, set by the test session: tests/conftest.py).
MODULES = ",".join(f"tests.support.lying_pipe.{mode}" for mode in ("lie", "die", "silent", "stray"))


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


def main(mode: Literal["lie", "die", "silent", "stray"]) -> int:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    format_line, split_line = source.readline(), source.readline()
    columns = [c for c in source.readline().decode().rstrip("\n").split("\t") if c]
    fmt, split = pipe.decode_task(format_line.decode().strip(), split_line.decode().strip())
    schema = pipe.projected(fmt.schema(), columns)
    batches = [b.select(columns) for b in fmt.read_split(split) if b.num_rows]
    if mode == "silent":  # exits before writing anything
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
