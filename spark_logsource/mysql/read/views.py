"""The two views of a binlog: what one event or one rows event becomes as output rows.

``view=events``: one row per event (``data`` holds the decoded body; a rows event's ``data`` is a summary);
``view=changes``: one row per changed row. :class:`ViewWriter` applies the option filters and pushed predicates
(:mod:`.event_filters`) to each event's facts, shapes the row and hands it to the batch builder
(:mod:`.batches`); corrupt input becomes a corrupt-record row, an error or nothing, as ``mode`` says.
The transaction state (GTID, XID, statement) comes from :mod:`.transactions`, which calls this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from spark_logsource.errors import CorruptDataError
from spark_logsource.filters import Predicate
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogEvent
from spark_logsource.mysql.decode.tablemap import TableMap
from spark_logsource.mysql.encode.images import EncodedRows
from spark_logsource.mysql.encode.runs import RowsRun
from spark_logsource.mysql.read.batches import AFTER, BEFORE, XID, BatchBuilder
from spark_logsource.mysql.read.filters import EventFilters
from spark_logsource.mysql.read.options import BinlogReadOptions

__all__ = ["ViewWriter", "rows_event_data", "table_map_data"]


def table_map_data(table_map: TableMap) -> dict[str, Any]:
    """The ``data`` of a TABLE_MAP event in the events view."""
    return {"table_id": table_map.table_id, "flags": table_map.flags, "database": table_map.database,
            "table": table_map.table,
            "columns": [{"name": c.name, "type": c.type, "real_type": c.real_type, "meta": c.meta,
                         "nullable": c.nullable, "unsigned": c.unsigned, "charset": c.charset}
                        for c in table_map.columns],
            "primary_key": list(table_map.primary_key) if table_map.primary_key is not None else None}


def rows_event_data(rows: EncodedRows, op: str, inner_index: int | None) -> dict[str, Any]:
    """The ``data`` of a rows event in the events view: a summary, not the rows."""
    data: dict[str, Any] = {"table_id": rows.table_id, "flags": rows.flags, "op": op, "rows": rows.n}
    if inner_index is not None:
        data["payload_index"] = inner_index
    return data


class ViewWriter:
    """Filters and shapes events into the rows of one view, collected in a :class:`BatchBuilder`."""

    def __init__(self, path: str, options: BinlogReadOptions, predicates: Sequence[Predicate]) -> None:
        self.mode = options.common.mode
        self.events_view = options.view == "events"
        self.include_query = options.include_query
        self.filters = EventFilters(options, predicates)
        self.out = BatchBuilder(path, options, predicates)

    @property
    def path(self) -> str:
        return self.out.path

    # -- events view ------------------------------------------------------------------------------------------
    def event(self, ev: BinlogEvent, gtid: str | None, database: str | None, table: str | None, query: str | None,
              data: Any) -> None:
        """One event's row (events view), when the filters keep it."""
        type_name = et.event_type_name(ev.type_code)
        if self.filters.facts_ok(ev, type_name, database, table, None):
            self.out.add((None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, type_name, ev.type_code,
                          ev.event_size, ev.flags, gtid, database, table, query, data, None))

    def rows_wanted(self, ev: BinlogEvent, table_map: TableMap, op: str) -> bool:
        """Whether a rows event passes the filters (decided before its rows are decoded)."""
        if self.filters.none:
            return True
        return self.filters.facts_ok(ev, et.event_type_name(ev.type_code), table_map.database, table_map.table, op)

    def rows_event(self, ev: BinlogEvent, rows: EncodedRows, table_map: TableMap, op: str, gtid: str | None,
                   statement: str | None) -> None:
        """A rows event's summary row (events view); the filters were applied by :meth:`rows_wanted`."""
        self.out.add((None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, et.event_type_name(ev.type_code),
                      ev.type_code, ev.event_size, ev.flags, gtid, table_map.database, table_map.table, statement,
                      rows_event_data(rows, op, ev.inner_index), None))

    # -- changes view -----------------------------------------------------------------------------------------
    def change_values(self, ev: BinlogEvent, gtid: str | None, xid: int | None, table_map: TableMap, op: str,
                      statement: str | None) -> list[Any]:
        """The columns a rows event's changes share (the row images are added by :meth:`changes`)."""
        return [None, ev.pos, ev.next_pos, ev.timestamp, ev.server_id, gtid, xid, table_map.database,
                table_map.table, op, None, None, None, statement if self.include_query else None, None]

    def run_values(self, run: RowsRun, gtid: str | None, xid: int | None, statement: str | None) -> list[Any]:
        """The columns of a run of rows events (:mod:`.encode.runs`): those that vary by event as per-row arrays."""
        pos, next_pos, timestamp, server_id, row_index = run.per_row()
        table_map = run.table_map
        return [None, pos, next_pos, timestamp, server_id, gtid, xid, table_map.database, table_map.table, run.op,
                row_index, None, None, statement if self.include_query else None, None]

    def changes(self, values: list[Any], rows: EncodedRows, xid: int | None = None, set_xid: bool = False) -> None:
        """The changed rows of one rows event (``set_xid``: fill in the XID learnt at the transaction's end)."""
        if set_xid:
            values[XID] = xid
        self.out.add_changes(values, rows, BEFORE, AFTER)

    # -- errors and output ------------------------------------------------------------------------------------
    def bad(self, pos: int, next_pos: int | None, error: CorruptDataError) -> None:
        """Bad input at ``[pos, next_pos)``: a corrupt-record row, a raised error or a log line, per ``mode``."""
        self.mode.handle(error, lambda e: self.out.add_corrupt(pos, next_pos, str(e)))

    def full(self) -> bool:
        return self.out.full()

    def run_room(self) -> int | None:
        """At most how many rows a run of rows events may add now (None: any; the batch builder cuts exactly)."""
        return None

    def emit(self, final: bool = True) -> Iterator[pa.RecordBatch]:
        """The rows so far as batches (``final=False``: a last partial batch waits for more rows)."""
        yield from self.out.emit(final)
