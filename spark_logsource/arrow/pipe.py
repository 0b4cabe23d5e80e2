"""The Python side of the columnar JVM reader (``jars/arrow-pipe``): a worker that decodes splits for Spark tasks.

Each executor keeps a few of these workers (``python -m spark_logsource.arrow.pipe``) and lends one to each task,
as pyspark reuses its own workers: the interpreter's start and the imports are paid once, not per task. A task
writes four lines to the worker's stdin:

1. the format, as :func:`encode_format` made it on the driver (the same line for every task of a read; the worker
   keeps the last one decoded);
2. the split, as :func:`encode_split` made it;
3. the columns Spark needs, tab-separated (none for a ``count(*)``; top-level names are the formats' own);
4. ``ring`` when the JVM takes the batches through shared memory (:mod:`.ring`), else ``stream``.

The worker reads the split with the format's own reader, keeps those columns, and answers on stdout with the
batches, through the ring's exchange (:mod:`.ring`) or as one Arrow IPC stream (ended by its end-of-stream marker),
followed by one status line: ``ok ROWS`` or ``error MESSAGE``. The JVM accepts the batches only when the status
says ``ok`` with the row count it received, so a worker that dies mid-task can never pass for a short split
(``docs/spark-speed.md``, "The columnar JVM reader").

The protocol owns file descriptor 1: at start the worker moves it aside and points fd 1 and ``sys.stdout`` at
stderr, so a library or a C extension that prints cannot corrupt a stream. A worker ends when its stdin closes (the
executor went away), after an error that is not one of ours, or when writing to the JVM fails. Logging goes to
stderr, which the executor keeps. No Spark import here.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import signal
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import pyarrow as pa

from spark_logsource.arrow.ring import BadAnswer, Ring, RingRefused, ring_available
from spark_logsource.errors import LogSourceError
from spark_logsource.filters import CorruptTally
from spark_logsource.logformat import LogFormat, Split

log = logging.getLogger(__name__)


def _encode(obj: Any) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))).decode()


def _decode(text: str) -> Any:
    return pickle.loads(zlib.decompress(base64.b64decode(text)))


def encode_format(fmt: LogFormat) -> str:
    """``fmt`` as one ASCII line (pickled, as Spark pickles a Python data source's reader into its tasks)."""
    return _encode(fmt)


def encode_pickled(data: bytes) -> str:
    """A format already pickled (by a caller that inspected the pickling) as :func:`encode_format`'s line."""
    return base64.b64encode(zlib.compress(data)).decode()


def encode_split(split: Split) -> str:
    """``split`` as one ASCII line."""
    return _encode(split)


class BadTask(TypeError):
    """A task line that is not what :func:`encode_format` / :func:`encode_split` make (a bug, not bad data)."""


def decode_task(format_line: str, split_line: str) -> tuple[LogFormat, Split]:
    """The format and the split of one task, checked to be what the encoders make."""
    fmt, split = _decode(format_line), _decode(split_line)
    if not isinstance(fmt, LogFormat) or not isinstance(split, Split):
        raise BadTask(f"not a task of spark_logsource.arrow.pipe: {type(fmt).__name__}, {type(split).__name__}")
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
    """``text`` with every run of white space (newlines included) made one space: a status is one line."""
    return " ".join(text.split())


class SinkError(Exception):
    """Writing to the JVM failed (it stopped reading): the stream cannot be ended cleanly, so the worker stops."""


def _status(exc: BaseException, ours: bool) -> bytes:
    return f"error {'' if ours else 'internal '}{type(exc).__name__}: {one_line(str(exc))}\n".encode()


class Worker:
    """Serves tasks; keeps the last format decoded (every task of one read sends the same one)."""

    def __init__(self) -> None:
        self._format_line = ""
        self._format: LogFormat | None = None
        self.ring: Ring | None = None
        self.ring_in_use = False

    def task(self, format_line: str, split_line: str) -> tuple[LogFormat, Split]:
        """The task's format (decoded again only when it differs from the last one) and split."""
        if format_line == self._format_line and self._format is not None:
            return self._format, _checked_split(split_line)
        fmt, split = decode_task(format_line, split_line)
        self._format_line, self._format = format_line, fmt
        return fmt, split

    def serve_task(self, format_line: str, split_line: str, columns: Sequence[str], sink: BinaryIO,
                   source: BinaryIO | None = None) -> tuple[bool, bytes]:
        """Write one task's batches to ``sink``; return whether the worker may serve another, and the status.

        With ``source`` (the JVM asked for the shared-memory ring, :mod:`.ring`) the batches go through the ring
        when the JVM can map it, else as one Arrow IPC stream."""
        try:
            fmt, split = self.task(format_line, split_line)
            schema = projected(fmt.schema(), columns)
        except Exception as exc:  # an empty stream keeps the protocol: the status line says what went wrong
            with pa.ipc.new_stream(sink, pa.schema([])):
                pass
            ours = isinstance(exc, LogSourceError)
            if not ours:
                log.error("task could not start", exc_info=exc)
            return ours, _status(exc, ours)
        tally = CorruptTally(fmt.common.corrupt_column_or_none)
        rows, failures = 0, list[BaseException]()
        batches = _guarded(selected(fmt.read_split(split), columns, tally), failures)
        ring = self._ring(schema, source, sink) if source is not None else None
        if ring is not None and source is not None:
            self.ring_in_use = True
            for batch in batches:
                # a broken pipe to the JVM ends the worker (main); a slot that cannot grow is a bug with a traceback
                ring.write(batch, source, sink)
                rows += batch.num_rows
        else:
            # Not a with-block: after a failed write the stream must stay unended (a half message may be out), so
            # that the JVM sees it broken rather than ended.
            writer = pa.ipc.new_stream(sink, schema)
            for batch in batches:
                try:
                    writer.write_batch(batch)
                except OSError as exc:  # the JVM stopped reading; anything else is a bug, and its traceback shows
                    raise SinkError(f"writing to the JVM failed after {rows} rows: {exc}") from exc
                rows += batch.num_rows
            writer.close()
        failure = failures[0] if failures else None
        if failure is None:
            tally.warn_kept()
            return True, f"ok {rows}\n".encode()
        ours = isinstance(failure, LogSourceError)
        if not ours:
            log.error("task failed after %d rows", rows, exc_info=failure)
        return ours, _status(failure, ours)

    def _ring(self, schema: pa.Schema, source: BinaryIO, sink: BinaryIO) -> Ring | None:
        """The worker's ring, offered to the JVM for this task; None when this system has none or the JVM could
        not map it (then the task is answered as a stream)."""
        if not ring_available():
            return None
        if self.ring is None:
            self.ring = Ring()
        try:
            self.ring.offer(schema, source, sink)
        except RingRefused as exc:
            log.warning("batches go through the pipe: %s", exc)
            return None
        return self.ring

    def settle(self, source: BinaryIO) -> None:
        """After a task's status: read what the JVM still owes the ring, so that the next task starts in step."""
        if self.ring is not None and self.ring_in_use:
            self.ring.settle(source)
        self.ring_in_use = False


def _checked_split(split_line: str) -> Split:
    split = _decode(split_line)
    if not isinstance(split, Split):
        raise BadTask(f"not a split of spark_logsource.arrow.pipe: {type(split).__name__}")
    return split


def _guarded(batches: Iterator[pa.RecordBatch], failures: list[BaseException]) -> Iterator[pa.RecordBatch]:
    """``batches`` until the reader fails; its exception is kept in ``failures`` (the stream still gets its end
    marker, then the status names the failure)."""
    try:
        yield from batches
    except Exception as exc:
        failures.append(exc)


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """Serve tasks from ``source`` until it closes or a task fails with an error that is not ours."""
    worker = Worker()
    while True:
        format_line = source.readline()
        if not format_line:
            return
        split_line = source.readline()
        columns = [c for c in source.readline().decode("utf-8").rstrip("\n").split("\t") if c]
        wants_ring = source.readline() == b"ring\n"
        again, status = worker.serve_task(format_line.decode("ascii").strip(), split_line.decode("ascii").strip(),
                                          columns, sink, source if wants_ring else None)
        sink.write(status)
        sink.flush()
        worker.settle(source)
        if not again:
            return


#: Bytes of the pipe to the JVM: a batch of typed rows is about a MiB; with Linux's default 64 KiB pipe the worker
#: and the task's thread would take turns 16 times a batch (docs/spark-speed.md).
PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux's fcntl command (fcntl.F_SETPIPE_SZ from Python 3.10, absent from typeshed's stubs)


def widen_pipe(fd: int) -> None:
    """Make the pipe ``fd`` writes to hold :data:`PIPE_BYTES`, where the system allows it (a pipe only, on Linux,
    within ``/proc/sys/fs/pipe-max-size``); anything else keeps its size."""
    try:
        import fcntl  # Unix only; imported here so that the module still imports elsewhere

        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, OSError) as exc:  # not a pipe, not Linux, above the system's limit: it only costs speed
        log.debug("the pipe keeps its size: %s", exc)


def main() -> int:
    # Ctrl-C in a local shell is the driver's to handle; the executor ends its workers by closing their stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    protocol = os.fdopen(os.dup(1), "wb")
    widen_pipe(protocol.fileno())
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        serve(sys.stdin.buffer, protocol)
    except (BrokenPipeError, SinkError, BadAnswer) as exc:  # the JVM stopped reading (a LIMIT, a killed task)
        log.debug("the JVM stopped reading: %s", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
