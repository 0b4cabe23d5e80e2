"""A batch read's vclock range cut into parts, each read over a connection of its own, at once.

Tarantool 2.6's relay writes each row with a send of its own, so one connection gets rows more slowly than the
server's files could give them; every ``SUBSCRIBE`` is served by a relay thread of its own on the server, and a
relay that subscribes from the middle of a range skips the rows before it cheaply (``docs/formats/
tarantool-replication.md``, "Reading a range in parts"; measured in ``benchmarks/HISTORY.md``, 2026-11-28).

- :func:`split_slice` cuts a :class:`~.live.LiveSlice` whose range advances one origin into up to ``parts``
  sub-ranges of equal LSN counts. The cuts are ordinary range ends: a cut inside a transaction leaves that
  transaction whole in the part containing its id and its tail rows are dropped by the next part, exactly as for
  ranges cut by a row budget, so the parts hold every row of the range once, in the range's order.
- :func:`read_in_order` reads the parts' batch iterators on threads of their own and yields their batches in
  part order: the first part's as they come, the later parts' once the earlier ones are done. What the later
  parts read ahead is bounded (``ahead_bytes`` of Arrow buffers in all): a part past the bound waits, and its
  server's relay waits with it (the relay blocks on a full connection, it does not time out).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from spark_logsource.errors import LogSourceError
from spark_logsource.tarantool.stream.live import LiveSlice

log = logging.getLogger(__name__)

#: fewer LSNs than this in a part are not worth a connection of their own (connect, AUTH, SUBSCRIBE: a few ms)
MIN_PART_LSNS = 16_384
#: what the parts after the one being consumed may hold in decoded batches, in all
AHEAD_BYTES = 256 << 20


def split_slice(slice_: LiveSlice, parts: int, min_lsns: int | None = None) -> list[LiveSlice]:
    """``slice_`` cut into up to ``parts`` consecutive sub-ranges of at least ``min_lsns`` LSNs each.

    Only a range in which one origin advances is cut (with several, a cut vclock might not lie on the server's own
    path and the parts' rows would not follow its order), and never a range starting from a snapshot (what it holds
    after the read view is known only once the snapshot is read).
    """
    if min_lsns is None:
        min_lsns = MIN_PART_LSNS
    start, end = slice_.start_vclock, slice_.end_vclock
    advancing = [r for r in end if end[r] > start.get(r, 0)]
    if slice_.snapshot or len(advancing) != 1 or parts <= 1:
        return [slice_]
    (origin,) = advancing
    first, last = start.get(origin, 0), end[origin]
    count = max(1, min(parts, (last - first) // max(min_lsns, 1)))
    if count == 1:
        return [slice_]
    cuts = [first + (last - first) * i // count for i in range(count + 1)]
    out = []
    for i in range(count):
        low = {**start, origin: cuts[i]} if cuts[i] > 0 else {r: v for r, v in start.items() if r != origin}
        high = {**end, origin: cuts[i + 1]}
        out.append(LiveSlice(slice_.replicaset, tuple(sorted(low.items())), tuple(sorted(high.items()))))
    return out


class _Part:
    """The batches one part has read and the consumer has not taken yet."""

    def __init__(self) -> None:
        self.batches: deque[pa.RecordBatch] = deque()
        self.done = False
        self.error: BaseException | None = None


def read_in_order(readers: Sequence[Callable[[], Iterator[pa.RecordBatch]]], ahead_bytes: int = AHEAD_BYTES,
                  name: str = "parts") -> Iterator[pa.RecordBatch]:
    """The batches of ``readers`` (each a part's iterator, started on a thread of its own) in the readers' order.

    A reader's error is raised as soon as the consumer next waits, whichever part it came from. Closing the
    returned iterator early stops every reader (each closes its iterator, and with it its connection).
    """
    if len(readers) == 1:
        yield from readers[0]()
        return
    parts = [_Part() for _ in readers]
    lock = threading.Condition()
    state = {"head": 0, "bytes": 0, "stop": False}

    def run(index: int) -> None:
        part = parts[index]
        batches: Iterator[pa.RecordBatch] | None = None
        try:
            batches = readers[index]()  # inside the try: a reader failing at its start still ends its part
            for batch in batches:
                size = batch.nbytes
                with lock:
                    # The part being consumed may always hand over one batch (so the consumer always moves on);
                    # the others wait while what is read ahead is over the bound.
                    while not state["stop"] and state["bytes"] >= ahead_bytes and not (
                            index == state["head"] and not part.batches):
                        lock.wait()
                    if state["stop"]:
                        return
                    part.batches.append(batch)
                    state["bytes"] += size
                    lock.notify_all()
        except BaseException as exc:  # handed to the consumer, raised there
            if not isinstance(exc, LogSourceError):  # ours name the server and the range; others get the part
                exc.add_note(f"{name}: part {index + 1} of {len(readers)}")
            with lock:
                part.error = exc
                lock.notify_all()
        finally:
            try:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()
            finally:
                with lock:
                    part.done = True
                    lock.notify_all()

    threads: list[threading.Thread] = []
    try:
        for i in range(len(readers)):  # inside the try: a thread that cannot start stops those already running
            thread = threading.Thread(target=run, args=(i,), name=f"{name}-{i}", daemon=True)
            thread.start()
            threads.append(thread)
        for index, part in enumerate(parts):
            while True:
                with lock:
                    if state["head"] != index:
                        state["head"] = index
                        lock.notify_all()  # the new head's reader may hand over a batch past the bound now
                    while not part.batches and not part.done and not any(p.error for p in parts):
                        lock.wait()
                    failed = next((p.error for p in parts if p.error is not None), None)
                    if failed is not None:
                        raise failed
                    if not part.batches:
                        break  # done
                    batch = part.batches.popleft()
                    state["bytes"] -= batch.nbytes
                    lock.notify_all()
                yield batch
    finally:
        with lock:
            state["stop"] = True
            lock.notify_all()
        for t in threads:
            t.join()
