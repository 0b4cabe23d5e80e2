"""Runs of rows events encoded by one kernel call: the bulk of a binlog without Python per event.

A multi-row INSERT, UPDATE or DELETE is written as consecutive rows events of one table, one event type and one
pair of column bitmaps (``docs/formats/mysql-binlog.md`` "Rows events"). After the event walk has read the first
of them, :func:`encode_run` hands the window's bytes to the kernel (``_kernel.encode_rows_run``), which frames the
following events itself (header, size, CRC or ``log_pos``: the checks of :meth:`.events.BinlogFile.events`),
checks that each is of the same table and shape, and encodes all their rows into one set of Arrow column parts.
The next statement of a transaction on the same table logs the same TABLE_MAP again (and, on MariaDB, its text in
an ANNOTATE_ROWS event first): the kernel steps over those when they change nothing the rows carry, so a
transaction of many multi-row statements is one run, not one per statement.
It stops before the first event that is anything else, or that its checks or its rows' decoding reject: that
event goes back to the walk, so its error (or corrupt-record row) is exactly what the Python path gives.

Python then runs once per run instead of once per event; the per-event columns (``pos``, ``next_pos``,
``timestamp``, ``server_id``, ``row_index``) come back as arrays, one value per row.

:func:`run_head` is what both views share: ``view=table`` reads its runs the same way, its rows as typed columns
(:func:`.table.kernel.typed_run`, the same kernel function given the conversions).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_logsource.errors import CorruptDataError
from spark_logsource.mysql.binlog.events import BinlogEvent
from spark_logsource.mysql.decode.tablemap import TableMap
from spark_logsource.mysql.encode.images import (
    _FAST_V2,
    KERNEL_AVAILABLE,
    OP_CODES,
    kernel_head,
    kernel_plans,
    kernel_rows,
)
from spark_logsource.mysql.encode.images import _kernel as kernel

__all__ = ["RUN_MAX_BYTES", "RUN_MAX_ROWS", "RowsRun", "RunHead", "encode_run", "event_bytes", "run_events", "run_head"]

#: At most this many rows per run (a run is one chunk of a batch; Spark's batches hold 8192 rows by default).
RUN_MAX_ROWS = 16384
#: At most this many event bytes per run.
RUN_MAX_BYTES = 32 << 20

#: The five int64 the kernel packs per event.
_POS, _NEXT_POS, _TIMESTAMP, _SERVER_ID, _ROWS = range(5)


@dataclass(slots=True)
class RowsRun:
    """Consecutive rows events of one table and shape, encoded together."""

    table_map: TableMap
    op: str
    events: np.ndarray  #: int64 (k, 5): pos, next_pos, timestamp, server_id, rows of each event
    rows: Any  #: every row of the run, in file order: EncodedRows, or view=table's table.kernel.TypedRows
    event_bytes: int  #: bytes of the run's events

    @property
    def end(self) -> int:
        """The file offset after the run's last event."""
        return int(self.events[-1, _NEXT_POS])

    @property
    def last_pos(self) -> int:
        return int(self.events[-1, _POS])

    def per_row(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The columns that vary by event, one value per row: ``pos``, ``next_pos``, ``timestamp`` (seconds),
        ``server_id`` (int64) and ``row_index`` (int32, the row's index within its own event)."""
        counts = self.events[:, _ROWS]
        pos, next_pos, timestamp, server_id = (np.repeat(self.events[:, c], counts)
                                               for c in (_POS, _NEXT_POS, _TIMESTAMP, _SERVER_ID))
        starts = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        row_index = (np.arange(len(pos), dtype=np.int64) - np.repeat(starts, counts)).astype(np.int32)
        return pos, next_pos, timestamp, server_id, row_index


@dataclass(slots=True)
class RunHead:
    """What the kernel needs to read a run that begins with a given event: its place in the window and the event's
    head, table and compiled plans."""

    start: int
    op: str
    table_id: int
    ncols: int
    present: int
    present_after: int
    table_map: TableMap
    plan: Any
    plan_after: Any
    label: str

    def args(self, ev: BinlogEvent, buf: bytes, buf_start: int, stop: int, crc_len: int, verify: bool,
             table_id_size: int, post_header_len: int) -> tuple[Any, ...]:
        """The kernel's arguments up to the column bitmaps: the window and its limits, the framing checks, the
        event's type and head."""
        stop = min(stop, buf_start + len(buf))  # nothing past the buffer is read; and it fits the kernel's int64
        return (buf, self.start, len(buf), buf_start, stop, crc_len, verify, zlib.crc32, ev.type_code, table_id_size,
                post_header_len, ev.type_code in _FAST_V2, self.table_id, self.ncols, self.present, self.present_after)


def run_head(ev: BinlogEvent, buf: bytes, buf_start: int, *, table_id_size: int, post_header_len: int,
             table_maps: dict[int, TableMap], path: str) -> RunHead | None:
    """The :class:`RunHead` of the run that begins with ``ev`` in ``buf`` (file offset ``buf_start`` is
    ``buf[0]``); None when ``ev`` itself is not for the kernel (the caller then takes the per-event path, which
    handles everything)."""
    start = ev.pos - buf_start
    if not KERNEL_AVAILABLE or ev.inner_index is not None or start < 0 or ev.next_pos - buf_start > len(buf):
        return None
    fast = kernel_head(ev.type_code, ev.body, table_id_size, post_header_len, table_maps)
    if fast is None:
        return None
    op, (table_id, _flags, _pos, ncols, present, present_after), table_map = fast
    try:
        plan, plan_after, label = kernel_plans(table_map, op, present, present_after, path, ev.pos)
    except CorruptDataError:
        return None  # the per-event path raises it where it belongs
    if plan is None or plan_after is None:
        return None
    return RunHead(start, op, table_id, ncols, present, present_after, table_map, plan, plan_after, label)


def run_events(packed: bytes) -> np.ndarray:
    """The kernel's five int64 per event as a (k, 5) array."""
    return np.frombuffer(packed, dtype="<i8").reshape(-1, 5)


def event_bytes(events: np.ndarray) -> int:
    return int((events[:, _NEXT_POS] - events[:, _POS]).sum())


def encode_run(ev: BinlogEvent, buf: bytes, buf_start: int, stop: int, *, crc_len: int, verify: bool,
               table_id_size: int, post_header_len: int, table_maps: dict[int, TableMap], path: str, as_json: bool,
               max_rows: int = RUN_MAX_ROWS, max_bytes: int = RUN_MAX_BYTES, map_body: bytes | None = None,
               skip_notes: bool = False) -> RowsRun | None:
    """The run of rows events that begins with ``ev``, read from ``buf`` (the walk's window: file offset
    ``buf_start`` is ``buf[0]``), with file offsets below ``stop``; None when ``ev`` itself is not for the kernel
    (the caller then takes the per-event path, which handles everything).

    ``map_body``: the body of the TABLE_MAP in force for ``ev``'s table; the run goes on past the same TABLE_MAP
    logged again (the next statement on the table, whose map changes nothing), and with ``skip_notes`` past the
    statement texts logged before it (ANNOTATE_ROWS, ROWS_QUERY: for a caller whose rows do not carry them)."""
    head = run_head(ev, buf, buf_start, table_id_size=table_id_size, post_header_len=post_header_len,
                    table_maps=table_maps, path=path)
    if head is None:
        return None
    assert kernel is not None  # run_head gives None when the kernel is not built
    packed, n, first, second = kernel.encode_rows_run(
        *head.args(ev, buf, buf_start, stop, crc_len, verify, table_id_size, post_header_len), head.plan,
        head.plan_after, None, None, OP_CODES[head.op], as_json, head.label, max_rows, max_bytes, map_body,
        skip_notes)
    if not packed:
        return None
    events = run_events(packed)
    rows = kernel_rows(head.table_id, 0, head.op, n, first, second)
    return RowsRun(head.table_map, head.op, events, rows, event_bytes(events))
