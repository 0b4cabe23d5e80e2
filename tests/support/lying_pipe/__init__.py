"""Misbehaving Python workers for the columnar JVM reader's tests (``tests/spark/test_columnar.py``).

A JVM task runs one of ``python -m tests.support.lying_pipe.lie`` / ``.die`` / ``.silent`` (the test's session
runs from the repository's root, so ``tests`` is importable). Each one breaks the protocol of
:mod:`spark_logsource.arrow.pipe` in one way the JVM must not take for a whole split: a status that claims more
rows than were sent, a stream cut short by the worker's death, a silent exit.
"""

from __future__ import annotations

import os
import sys
from typing import Literal

import pyarrow as pa

from spark_logsource.arrow import pipe

#: Every module of this package, for the static setting that lets the JVM run them
#: (``spark.logsource.arrowPipe.extraModules``, set by the test session: tests/conftest.py).
MODULES = ",".join(f"tests.support.lying_pipe.{mode}" for mode in ("lie", "die", "silent"))


def main(mode: Literal["lie", "die", "silent"]) -> int:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    format_line, split_line = source.readline(), source.readline()
    columns = [c for c in source.readline().decode().rstrip("\n").split("\t") if c]
    fmt, split = pipe.decode_task(format_line.decode().strip(), split_line.decode().strip())
    schema = pipe.projected(fmt.schema(), columns)
    batches = [b.select(columns) for b in fmt.read_split(split) if b.num_rows]
    if mode == "silent":  # exits before writing anything
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
