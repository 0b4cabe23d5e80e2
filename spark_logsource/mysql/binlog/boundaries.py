"""Transaction boundaries of a binlog, found by walking event headers (and the few bodies that decide them).

A *boundary* is a position where no transaction is open: the end of an XID / XA_PREPARE / TRANSACTION_PAYLOAD
event, of a ``COMMIT`` / ``ROLLBACK`` query, of a statement logged alone after its GTID (DDL), or of any event
outside a transaction (FDE, GTID_LIST, BINLOG_CHECKPOINT, ROTATE, STOP, ...). A transaction never spans two files,
so a closed file's end is a boundary too. An event not yet wholly written at the tail of the active file is
"not yet": the walk stops before it. The MariaDB GTID state is carried along (GTID_LIST sets it, each
transaction's GTID event advances it once the transaction is complete).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from spark_logsource.errors import TruncatedDataError
from spark_logsource.framing import BadRange
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogFile
from spark_logsource.mysql.decode.gtid import decode_gtid_list, decode_maria_gtid
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.query_event import parse_query
from spark_logsource.mysql.position import FILE_START, GtidState
from spark_logsource.mysql.read.transactions import BEGIN_RE, GROUP_TYPES, QUERY_TYPES, is_end_query

__all__ = ["Boundary", "last_boundary"]

log = logging.getLogger(__name__)

_ENDS_TRANSACTION = frozenset({et.XID, et.XA_PREPARE, et.TRANSACTION_PAYLOAD})


@dataclass(frozen=True, slots=True)
class Boundary:
    """``pos``: the boundary reached; ``gtid``: the GTID state there; ``at_end``: it is the end of what was read."""

    pos: int
    gtid: GtidState
    at_end: bool


def last_boundary(bf: BinlogFile, start: int, gtid: GtidState, *, max_bytes: int | None = None) -> Boundary:
    """Walk from the boundary ``start`` (4: the file start) to the last boundary of ``bf`` as it is now.

    With ``max_bytes``, stop at the first boundary at least that many bytes after ``start`` (a transaction
    larger than the budget is still taken whole).
    """
    state = gtid.copy()
    best = Boundary(start, state.copy(), False)
    in_txn = after_gtid = False
    pending_gtid: str | None = None
    query_post_header = bf.fde.post_header_len(et.QUERY, 13)
    for item in bf.events(0 if start <= FILE_START else start):
        if isinstance(item, BadRange):
            if isinstance(item.error, TruncatedDataError) and (item.next_offset or bf.size) >= bf.size:
                break  # an event still being written: not yet
            log.warning("%s: %s (the reader reports it per the parse mode)", bf.path, item.error)
            continue
        code, end = item.type_code, item.next_pos
        ends = False
        if code in GROUP_TYPES:
            in_txn = after_gtid = True
            pending_gtid = None
            if code == et.MARIA_GTID:
                try:
                    pending_gtid = decode_maria_gtid(item.body, item.server_id)["gtid"]
                except BinlogDecodeError:
                    pending_gtid = None
            continue
        if code in QUERY_TYPES:
            try:
                query = parse_query(item.body, compressed=code == et.MARIA_QUERY_COMPRESSED,
                                    post_header_len=query_post_header, max_uncompressed=64 << 20)
            except BinlogDecodeError:
                query = {"query": ""}
            if BEGIN_RE.match(query["query"]):
                in_txn, after_gtid = True, False
                continue
            ends = is_end_query(query) or after_gtid or not in_txn
            after_gtid = False
        elif code in _ENDS_TRANSACTION:
            ends = True
        elif code == et.MARIA_GTID_LIST and not in_txn:
            with contextlib.suppress(BinlogDecodeError):
                state = GtidState.of(decode_gtid_list(item.body)["gtids"])
            ends = True
        elif not in_txn:
            ends = code not in et.ROWS_TYPES and code not in (et.TABLE_MAP, et.MARIA_ANNOTATE_ROWS, et.ROWS_QUERY)
        if not ends:
            continue
        in_txn = after_gtid = False
        if pending_gtid is not None:
            state.add(pending_gtid)
            pending_gtid = None
        best = Boundary(end, state.copy(), end >= bf.size)
        if max_bytes is not None and end - start >= max_bytes:
            break
    return best
