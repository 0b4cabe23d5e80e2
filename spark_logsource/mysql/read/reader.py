"""Binlog files to Arrow record batches: the ``changes`` and ``events`` views, filters, splits, corrupt records.

Entry point :func:`iter_file_batches` reads one byte range ``[start, end)`` of one file (the Spark layer and the
Arrow API call it per split). The work is done by one module per job: :mod:`.read_options` (what to read),
:mod:`.event_filters` (mysqlbinlog's filters and pushed predicates), :mod:`.splits` (which events a split reads),
:mod:`.transactions` (GTID, table maps, XID of each transaction), :mod:`.views` (events → rows of a view) and
:mod:`.batches` (rows → Arrow batches within row and byte limits).

Option semantics (mysqlbinlog's): ``start_position`` / ``stop_position`` keep events whose ``pos`` is in
``[start, stop)`` (reading stops at ``stop``); ``start_datetime`` / ``stop_datetime`` keep events whose
timestamp is in ``[start, stop)`` (a filter: mysqlbinlog stops at the first later event, which is the same for
files whose timestamps do not go back); ``server_ids``, ``databases`` (the QUERY schema or the table's
database), ``tables`` (``db.table`` with ``*`` / ``?`` wildcards), ``ops`` and ``event_types`` (names as in
:mod:`event_types`, ``_EVENT`` suffix optional) filter events/rows; in ``view=events`` events without a
database/table/op are not filtered by those options. Pushed-down predicates are applied exactly to every batch
(:func:`apply_predicates`); rows events whose table, op, server id, time or position fail a filter or a
predicate are skipped without decoding their rows.

Bad data (``mode``)
    FAILFAST raises the :class:`CorruptDataError` (path + offset). PERMISSIVE emits one row per bad event or
    unreadable byte range with ``file``, ``pos``, ``next_pos`` and the corrupt-record column set, and keeps
    every good event. DROPMALFORMED logs and skips. A broken file head (magic, FDE) or an encrypted binlog
    (START_ENCRYPTION) ends the file: one error for the whole rest (emitted by the split at offset 0, resp. the
    split reaching the event). A rows event whose TABLE_MAP is not in its transaction is an error, not a guess.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError
from spark_logsource.filters import Predicate
from spark_logsource.mysql.binlog.events import BinlogFile, is_gzip
from spark_logsource.mysql.binlog.splits import walk_split
from spark_logsource.mysql.read.batches import BatchBuilder
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.transactions import LOOK_AHEAD_TYPES, MAX_PENDING_ROWS, TransactionMachine
from spark_logsource.mysql.read.views import ViewWriter
from spark_logsource.mysql.schema import binlog_schema
from spark_logsource.options import CommonOptions, ParseMode

__all__ = ["MAX_PENDING_ROWS", "BinlogReadOptions", "binlog_schema", "find_split_start", "iter_file_batches"]

log = logging.getLogger(__name__)


def iter_file_batches(source: Any, path: str, *, start: int = 0, end: int | None = None,
                      options: BinlogReadOptions | None = None,
                      predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
    """The record batches of the split ``[start, end)`` of one binlog (see the module docstring).

    ``source``: a seekable binary file (``pyarrow.NativeFile``, Python file), the file's bytes, or None to open
    ``path``. ``.gz`` files are read whole by the split at offset 0 (other splits of them are empty).
    """
    options = options or BinlogReadOptions()
    if start > 0 and source is not None and not isinstance(source, bytes | bytearray | memoryview) \
            and is_gzip(source, path):
        return  # a gzipped binlog is read whole by the split at offset 0 (byte offsets are of the compressed file)
    try:
        bf = BinlogFile(source, path, verify_checksums=options.common.verify_checksums)
    except CorruptDataError as exc:
        if start > 0:
            return  # the split at the head reports it
        out = BatchBuilder(path, options, predicates)
        options.common.mode.handle(exc, lambda e: out.add_corrupt(e.offset, None, str(e)))
        yield from out.emit()
        return
    try:
        if bf.is_gzip:
            if start > 0:
                return
            end = None  # split offsets count compressed bytes: the whole inflated file belongs to split 0
        machine = TransactionMachine(bf.fde, options, ViewWriter(path, options, predicates),
                                     look_ahead=lambda pos: bf.events(pos, only=LOOK_AHEAD_TYPES, step_over=False))
        yield from walk_split(bf, start, end, machine)
    finally:
        bf.close()


def find_split_start(source: Any, path: str, offset: int, *, verify_checksums: bool = True) -> int | None:
    """The position of the first event the split starting at ``offset`` reads (None: the split is empty).

    For tests and planning diagnostics; :func:`iter_file_batches` applies the same rule while reading.
    """
    options = BinlogReadOptions(view="events", common=CommonOptions(mode=ParseMode.DROPMALFORMED,
                                                                    verify_checksums=verify_checksums))
    for batch in iter_file_batches(source, path, start=offset, end=None, options=options):
        if len(batch):
            first: int = batch.column("pos")[0].as_py()
            return first
    return None
