"""The Python side of the columnar JVM reader (``jars/arrow-pipe``): a worker that decodes splits for Spark tasks.

Each executor keeps a few of these workers (``python -m spark_logsource.arrow.pipe``) and lends one to each task,
as pyspark reuses its own workers: the interpreter's start and the imports are paid once, not per task. A task
writes two lines to the worker's stdin:

1. the task: a format and one of its splits, as :func:`encode_task` made them on the driver;
2. the columns Spark needs, tab-separated (none for a ``count(*)``).

The worker reads the split with the format's own reader, keeps those columns, and answers on stdout with one
Arrow IPC stream (always ended by its end-of-stream marker) followed by one status line: ``ok ROWS`` or
``error MESSAGE``. The JVM reads the batches as columnar batches without copying them into rows, and accepts the
stream only when the status says ``ok`` with the row count it received, so a worker that dies mid-stream can
never pass for a short split (``docs/spark-speed.md``, "The columnar JVM reader").

A worker ends when its stdin closes (the executor went away) or after an error that is not one of ours. Logging
goes to stderr, which the executor keeps. No Spark import here.
"""

from __future__ import annotations

import base64
import logging
import pickle
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa

from spark_logsource.errors import LogSourceError
from spark_logsource.filters import CorruptTally
from spark_logsource.logformat import LogFormat, Split

log = logging.getLogger(__name__)


def encode_task(fmt: LogFormat, split: Split) -> str:
    """``fmt`` and ``split`` as one ASCII line (the format is pickled as Spark pickles it into its tasks)."""
    return base64.b64encode(zlib.compress(pickle.dumps((fmt, split), protocol=pickle.HIGHEST_PROTOCOL))).decode()


def decode_task(text: str) -> tuple[LogFormat, Split]:
    fmt, split = pickle.loads(zlib.decompress(base64.b64decode(text)))
    if not isinstance(fmt, LogFormat) or not isinstance(split, Split):
        raise TypeError(f"not a task of spark_logsource.arrow.pipe: {type(fmt).__name__}, {type(split).__name__}")
    return fmt, split


def projected(schema: pa.Schema, columns: Sequence[str]) -> pa.Schema:
    """``schema`` with only ``columns``, in their order (the JVM asks for a subset, in the schema's order)."""
    return pa.schema([schema.field(name) for name in columns])


def selected(
    batches: Iterator[pa.RecordBatch], columns: Sequence[str], tally: CorruptTally
) -> Iterator[pa.RecordBatch]:
    """The non-empty ``batches`` cut to ``columns``; corrupt-record rows are counted before the cut."""
    wanted = list(columns)
    for batch in batches:
        tally.count(batch)
        if batch.num_rows:
            # select() keeps the row count with no column left: a count(*) needs only the rows.
            yield batch if batch.schema.names == wanted else batch.select(wanted)


def one_line(text: str) -> str:
    return " ".join(text.split())


def serve_task(task: str, columns: Sequence[str], sink: BinaryIO) -> tuple[bool, bytes]:
    """Write one task's stream to ``sink``; return whether the worker may serve another, and the status line."""
    rows = 0
    try:
        fmt, split = decode_task(task)
        schema = projected(fmt.schema(), columns)
    except Exception as exc:  # an empty stream keeps the protocol: the status line says what went wrong
        with pa.ipc.new_stream(sink, pa.schema([])):
            pass
        ours = isinstance(exc, LogSourceError)
        if not ours:
            log.error("task could not start", exc_info=exc)
        return ours, f"error {'' if ours else 'internal '}{type(exc).__name__}: {one_line(str(exc))}\n".encode()
    tally = CorruptTally(fmt.common.corrupt_column_or_none)
    failure: BaseException | None = None
    with pa.ipc.new_stream(sink, schema) as writer:
        try:
            for batch in selected(fmt.read_split(split), columns, tally):
                writer.write_batch(batch)
                rows += batch.num_rows
        except Exception as exc:  # the stream still gets its end marker, then the status names the failure
            failure = exc
    if failure is None:
        tally.warn_kept()
        return True, f"ok {rows}\n".encode()
    if isinstance(failure, LogSourceError):
        return True, f"error {type(failure).__name__}: {one_line(str(failure))}\n".encode()
    log.error("task failed after %d rows", rows, exc_info=failure)
    return False, f"error internal {type(failure).__name__}: {one_line(str(failure))}\n".encode()


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """Serve tasks from ``source`` until it closes or a task fails with an error that is not ours."""
    while True:
        task = source.readline()
        if not task:
            return
        columns = [c for c in source.readline().decode("utf-8").rstrip("\n").split("\t") if c]
        again, status = serve_task(task.decode("ascii").strip(), columns, sink)
        sink.write(status)
        sink.flush()
        if not again:
            return


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the JVM stopped reading (a LIMIT reached, a task killed): it drops this worker
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
