"""The sync walk of one split ``[start, end)`` of one binlog file: which events a split reads.

A split with ``start > 0`` begins at its first *sync point*: the walk starts at the first offset >= start where a
valid event header is found (:meth:`BinlogFile.resync`: known type, plausible size, ``log_pos``, CRC) and skips
events up to the first group start whose kind is certain from the walk alone (a GTID event, or a BEGIN whose
predecessor was walked and is not a GTID event). It reads every event from there, past ``end`` if needed, up to
the first such sync point at or after ``end`` (found with the same rule from ``resync(end)``), so consecutive
splits partition the event chain exactly: their union equals the whole-file read, event for event and row for
row. A split at ``start == 0`` reads from the FDE. Events outside transactions (PREVIOUS_GTIDS, ROTATE,
GTID_LIST, ...) are read by the split whose walk reaches them. The FDE is always taken from the file head.

The events read are fed to a :class:`~.transactions.TransactionMachine`; ``stop_position`` ends the walk. A rows
event and the rows events after it of the same table and shape are read as one run by the kernel
(:meth:`~.transactions.TransactionMachine.rows_run`), and the walk resumes after them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from spark_logsource.errors import CorruptDataError, EncryptedBinlogError
from spark_logsource.framing import BadRange
from spark_logsource.mysql.binlog.event_types import ROWS_TYPES
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile, Resume
from spark_logsource.mysql.encode.runs import RowsRun
from spark_logsource.mysql.read.transactions import GROUP_TYPES, QUERY_TYPES, TransactionMachine, ignorable, is_begin

__all__ = ["walk_range", "walk_split"]


def walk_split(bf: BinlogFile, start: int, end: int | None, machine: TransactionMachine) -> Iterator[pa.RecordBatch]:
    """Feed the events of the split ``[start, end)`` of ``bf`` to ``machine``; yield its view's batches."""
    view = machine.view
    stop_pos = machine.options.stop_position
    run_stop = bf.size if stop_pos is None else stop_pos
    resume = Resume()
    if start <= 0:
        walk = bf.events(0, resume=resume)
        skipping = False
    else:
        walk = bf.events(bf.resync(start), resume=resume)
        skipping = True
    # The previous walked event: its type (-1 for a bad byte range, None before the first) and position.
    prev_type: int | None = None
    prev_pos = -1
    end_bound: int | None = None
    for item in walk:
        pos = item.offset if isinstance(item, BadRange) else item.pos
        if stop_pos is not None and pos >= stop_pos:
            break
        past_end = end is not None and pos >= end
        if end is not None and past_end and end_bound is None:  # (end is not None: said again for the type checker)
            end_bound = bf.resync(end)
        if skipping and past_end:
            return  # no sync point in this split: the previous split reads on to the next one
        if isinstance(item, BadRange):
            if not skipping:
                view.bad(pos, item.next_offset, item.error)
            prev_type, prev_pos = -1, pos
            if view.full():
                yield from view.emit(final=False)
            continue
        if not skipping and item.type_code in ROWS_TYPES:
            # the bulk of a binlog: no group start, no query to decode (the general path below, without its tests)
            prev_type, prev_pos = item.type_code, pos
            try:
                run = machine.rows_run(item, bf.window(), run_stop, bf.crc_len, bf.verify_checksums)
                if run is None:
                    machine.rows_event(item)
                else:
                    resume.at, prev_pos = run.end, run.last_pos
            except EncryptedBinlogError as exc:
                view.bad(pos, bf.size, exc)
                break
            except CorruptDataError as exc:
                view.bad(pos, item.next_pos, exc)
            if view.full():
                yield from view.emit(final=False)
            continue
        if ignorable(item):
            continue
        decoded_query = None
        if item.type_code in QUERY_TYPES:
            try:
                decoded_query = machine.decode_query(item)
            except CorruptDataError as exc:
                if not skipping:
                    view.bad(pos, item.next_pos, exc)
                prev_type, prev_pos = item.type_code, pos
                continue
        is_gtid = item.type_code in GROUP_TYPES
        begin = is_begin(item, decoded_query)
        begin_after_walked = begin and prev_type is not None and prev_type not in GROUP_TYPES
        if skipping:
            if not (is_gtid or begin_after_walked):
                prev_type, prev_pos = item.type_code, pos
                continue
            skipping = False
        elif past_end and (is_gtid or (begin_after_walked and end_bound is not None and prev_pos >= end_bound)):
            break  # the first sync point of the next split
        if is_gtid or (begin and prev_type not in GROUP_TYPES):
            machine.begin_group()
        prev_type, prev_pos = item.type_code, pos
        try:
            machine.process(item, decoded_query)
        except EncryptedBinlogError as exc:
            view.bad(pos, bf.size, exc)
            break
        except CorruptDataError as exc:
            view.bad(pos, item.next_pos, exc)
        if view.full():
            yield from view.emit(final=False)
    machine.finish()
    yield from view.emit()


def walk_range(bf: BinlogFile, start: int, stop: int | None, machine: TransactionMachine
               ) -> Iterator[pa.RecordBatch]:
    """Feed the events whose position is in ``[start, stop)`` to ``machine``; yield its view's batches.

    ``start`` is a transaction boundary (an event's position, not a guess: streaming offsets), 4 or less meaning
    the file's start with its FDE, so no sync search is needed.
    """
    view = machine.view
    run_stop = bf.size if stop is None else stop
    resume = Resume()
    for item in bf.events(0 if start <= 4 else start, resume=resume):
        if stop is not None and (item.offset if isinstance(item, BadRange) else item.pos) >= stop:
            break
        if isinstance(item, BadRange):
            view.bad(item.offset, item.next_offset, item.error)
            machine.prev_type = -1
        else:
            try:
                run = _run_in_range(bf, item, run_stop, machine)
                if run is None:
                    machine.feed(item)
                else:  # a rows event never starts a group: what feed() does with one, for the whole run
                    machine.prev_type = item.type_code
                    resume.at = run.end
            except EncryptedBinlogError as exc:
                view.bad(item.pos, bf.size, exc)
                break
        if view.full():
            yield from view.emit(final=False)
    machine.finish()
    yield from view.emit()


def _run_in_range(bf: BinlogFile, item: BinlogEvent, stop: int, machine: TransactionMachine) -> RowsRun | None:
    """The run of rows events starting at ``item`` (None: feed ``item`` alone, which reports any error it has)."""
    if item.type_code not in ROWS_TYPES:
        return None
    try:
        return machine.rows_run(item, bf.window(), stop, bf.crc_len, bf.verify_checksums)
    except CorruptDataError:
        return None
