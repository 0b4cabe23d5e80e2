"""The mysqlbinlog-style option filters and the pushed predicates, decided on event-level facts before decoding.

Filters on facts every event has (position, time, server id, event type, the op of a rows event) are compiled to
:class:`~spark_logsource.filters.Predicate` objects, the same kind Spark pushes down. Two filters keep their own
code because their meaning is not a SQL predicate: ``databases`` and ``tables`` do not filter events that have no
database/table (in ``view=events``, a ROTATE passes ``tables=shop.*``; a predicate would drop its NULL), and
``tables`` takes shell wildcards (``shop.*``, ``db.t?``).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Sequence

from spark_logsource.filters import Predicate
from spark_logsource.mysql.binlog.events import BinlogEvent
from spark_logsource.mysql.read.options import BinlogReadOptions

__all__ = ["EventFilters", "option_predicates"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Columns whose value is known for an event before its body is decoded (pushed predicates on them skip events).
EVENT_COLUMNS = frozenset({"pos", "next_pos", "server_id", "timestamp", "event_type", "event_type_code",
                           "database", "table", "op", "event_size", "flags"})


def _normalise_type_name(name: str) -> str:
    name = name.strip().upper()
    return name[:-6] if name.endswith("_EVENT") else name


def _seconds(value: dt.datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH).total_seconds()


def option_predicates(options: BinlogReadOptions) -> tuple[list[Predicate], list[Predicate]]:
    """The option filters that are plain predicates: ``(on the event header, on the event type / op)``.

    Header predicates see ``timestamp`` as epoch seconds (the header's integer), not as a datetime.
    """
    header: list[Predicate] = []
    if options.start_position is not None:
        header.append(Predicate("pos", ">=", options.start_position))
    if options.start_datetime is not None:
        header.append(Predicate("timestamp", ">=", _seconds(options.start_datetime)))
    if options.stop_datetime is not None:
        header.append(Predicate("timestamp", "<", _seconds(options.stop_datetime)))
    if options.server_ids is not None:
        header.append(Predicate("server_id", "in", tuple(sorted(options.server_ids))))
    kind: list[Predicate] = []
    if options.event_types:
        kind.append(Predicate("event_type", "in", tuple(_normalise_type_name(n) for n in options.event_types)))
    if options.ops:
        kind.append(Predicate("op", "in", tuple(options.ops)))
    return header, kind


#: The event columns every event of a run of rows events has in common.
_RUN_FACTS = frozenset({"event_type", "event_type_code", "database", "table", "op"})


class EventFilters:
    """The option filters and the pushed predicates, evaluated on event-level facts before decoding."""

    def __init__(self, options: BinlogReadOptions, predicates: Sequence[Predicate]) -> None:
        self.header_predicates, kind = option_predicates(options)
        self.type_predicates = [p for p in kind if p.column == "event_type"]
        self.op_predicates = [p for p in kind if p.column == "op"]
        self.databases = frozenset(options.databases) if options.databases else None
        self.table_patterns = [re.compile(fnmatch.translate(t)) for t in options.tables] if options.tables else None
        self.predicates = [p for p in predicates if p.column in EVENT_COLUMNS]
        self.needs_datetime = any(p.column == "timestamp" for p in self.predicates)
        #: No filter at all: every event passes (checked once, not per event).
        self.none = not (self.header_predicates or self.type_predicates or self.op_predicates or self.databases
                         or self.table_patterns or self.predicates)
        #: Every filter looks only at what a run of rows events shares (type, database, table, op), so the first
        #: event's verdict is the run's (:mod:`.encode.runs`).
        self.same_for_a_run = not self.header_predicates and all(p.column in _RUN_FACTS for p in self.predicates)

    def header_ok(self, ev: BinlogEvent) -> bool:
        """Filters on the header alone (position, time, server id)."""
        for p in self.header_predicates:
            value = ev.pos if p.column == "pos" else ev.timestamp if p.column == "timestamp" else ev.server_id
            if not p.matches(value):
                return False
        return True

    def table_ok(self, database: str | None, table: str | None) -> bool:
        if database is not None and self.databases is not None and database not in self.databases:
            return False
        if table is not None and self.table_patterns is not None:
            name = f"{database}.{table}"
            return any(p.match(name) for p in self.table_patterns)
        return True

    def facts_ok(self, ev: BinlogEvent, type_name: str, database: str | None, table: str | None,
                 op: str | None) -> bool:
        """Every filter that can be decided for the event (predicates included, on the event's columns)."""
        if not self.header_ok(ev):
            return False
        for p in self.type_predicates:
            if not p.matches(type_name):
                return False
        if op is not None:
            for p in self.op_predicates:
                if not p.matches(op):
                    return False
        if not self.table_ok(database, table):
            return False
        if self.predicates:
            facts = {"pos": ev.pos, "next_pos": ev.next_pos, "server_id": ev.server_id, "event_type": type_name,
                     "event_type_code": ev.type_code, "database": database, "table": table, "op": op,
                     "event_size": ev.event_size, "flags": ev.flags}
            if self.needs_datetime:
                facts["timestamp"] = _EPOCH + dt.timedelta(seconds=ev.timestamp)
            for p in self.predicates:
                if p.column in facts and not p.matches(facts[p.column]):
                    return False
        return True
