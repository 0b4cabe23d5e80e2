"""``view=table`` in a stream: the table's layout carried in the offsets, and the DDL between two offsets.

``docs/formats/mysql-typed.md`` "Streaming" states the rules. A stream's Spark schema is fixed when the query
starts, before Spark says which checkpoint offset it resumes from. So each offset holds, besides its binlog
position, the table's name and layout in force there (``"table"``: compact JSON). The layout history then lives in
Spark's own offset log: a restarted query knows the layout at its checkpoint without a side store that could be
lost. Between two offsets the driver replays the DDL statements of the range on top of the start's layout
(:class:`TableFollower`); the slices carry the resulting versions to the executors.

A statement whose new layout the fixed schema cannot name (a new column, a renamed column, a widened type), a
DROP of the table, or a statement on the table that cannot be read stops the stream: the range ends at the
boundary before the statement's transaction, and the next call raises
:class:`~spark_logsource.errors.SchemaChangeError` naming the statement and its position.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_logsource.errors import OptionError, SchemaChangeError
from spark_logsource.mysql.position import BinlogPosition, binlog_number
from spark_logsource.mysql.table.ddl import DDL_FILE, Catalog, TableHistory, Version
from spark_logsource.mysql.table.layout import VARIANT, ColumnSpec, Layout, arrow_type, widen
from spark_logsource.mysql.table.slices import DdlStatement, TableSlice
from spark_logsource.mysql.table.statements import without_prefix

if TYPE_CHECKING:
    from spark_logsource.mysql.table.rows import TableView
    from spark_logsource.streaming.stream import Offset

__all__ = ["DdlStatement", "TableFollower", "TableSlice", "TableState", "layout_from_json", "layout_to_json"]

log = logging.getLogger(__name__)

#: The position of the version an offset's state stands for: before every event of the log.
SEED = (DDL_FILE - 1, 0)
#: ColumnSpec fields and their defaults: the JSON of a column leaves the defaults out.
_DEFAULTS: dict[str, Any] = {"unsigned": False, "size": 0, "precision": 0, "scale": 0, "binary": False,
                             "charset": None, "values": None, "nullable": True}
_DROPPED = ("dropped", "replaced")
NOT_YET = "the table does not exist yet"


def layout_to_json(layout: Layout) -> dict[str, Any]:
    """A layout as a small JSON object (the fields that are not their defaults)."""
    columns = []
    for spec in layout.columns:
        out: dict[str, Any] = {"name": spec.name, "kind": spec.kind}
        for name, default in _DEFAULTS.items():
            value = getattr(spec, name)
            if value != default:
                out[name] = list(value) if isinstance(value, tuple) else value
        columns.append(out)
    doc: dict[str, Any] = {"columns": columns}
    if layout.default_charset is not None:
        doc["charset"] = layout.default_charset
    primary_key = getattr(layout, "primary_key", ())
    if primary_key:
        doc["primary_key"] = list(primary_key)
    return doc


def layout_from_json(doc: Any) -> Layout:
    """The inverse of :func:`layout_to_json`; OptionError on anything else."""
    try:
        specs = []
        for col in doc["columns"]:
            fields = {name: col.get(name, default) for name, default in _DEFAULTS.items()}
            if fields["values"] is not None:
                fields["values"] = tuple(str(v) for v in fields["values"])
            specs.append(ColumnSpec(str(col["name"]), str(col["kind"]), **fields))
        layout = Layout(tuple(specs), doc.get("charset"))
        if doc.get("primary_key") and hasattr(layout, "primary_key"):
            layout = dataclasses.replace(layout, primary_key=tuple(str(k) for k in doc["primary_key"]))
        return layout
    except (KeyError, TypeError, AttributeError) as exc:
        raise OptionError("offset", f"the table layout in the offset is not one this reader writes: {exc}") from None


@dataclass(frozen=True, slots=True)
class TableState:
    """The table at an offset: its name there, and its layout (None: unknown, see ``reason``)."""

    database: str
    table: str
    layout: Layout | None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": [self.database, self.table]}
        doc["layout"] = layout_to_json(self.layout) if self.layout is not None else None
        if self.reason is not None:
            doc["reason"] = self.reason
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> TableState:
        try:
            database, table = (str(n) for n in doc["name"])
            layout = doc.get("layout")
            return cls(database, table, layout_from_json(layout) if layout is not None else None, doc.get("reason"))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OptionError("offset", f"the table state in the offset is not one this reader writes: {exc}"
                              ) from None

    def version(self) -> Version:
        return Version(SEED, self.database, self.table, self.layout, self.reason)


@dataclass(frozen=True, slots=True)
class _Stop:
    statement: DdlStatement
    reason: str
    hint: str | None = None


@dataclass(slots=True)
class _Replay:
    versions: list[Version]
    state: TableState
    stop: _Stop | None


def file_number(file: str) -> int:
    """The number of a binlog in positions and in ``seq`` (``mysql-bin.000042`` → 42)."""
    return binlog_number(file)[1]


def is_ddl_text(query: str) -> bool:
    """Whether a statement may change a table's layout or content as a whole (what the driver must look at)."""
    return bool(_DDL_RE.match(without_prefix(query)))


_DDL_RE = re.compile(r"\s*(?:/\*.*?\*/\s*)*(CREATE|ALTER|RENAME|DROP|TRUNCATE)\b", re.IGNORECASE | re.DOTALL)


class TableFollower:
    """The driver's side of a ``view=table`` stream (see the module docstring)."""

    def __init__(self, view: TableView, history: TableHistory, source: str) -> None:
        self.view = view
        self.history = history  # positions: (binlog number, event position)
        self.source = source

    # -- states in offsets ------------------------------------------------------------------------------------
    def state_of(self, offset: Offset) -> TableState:
        """The table's state at ``offset``: the offset's own, else (a new query) the history's there."""
        doc = offset.get("table")
        if doc is not None:
            return TableState.from_json(doc)
        here = BinlogPosition.from_offset(offset)
        version = self.history.at((file_number(here.file), here.pos))
        if version is None:
            options = self.view.options
            return TableState(options.database, options.table, None, NOT_YET)
        return TableState(version.database, version.table, version.layout, version.reason)

    @staticmethod
    def with_state(offset: Offset, state: TableState) -> Offset:
        out = {k: v for k, v in offset.items() if k != "table"}
        out["table"] = state.to_json()
        return out

    def fits(self, layout: Layout) -> str | None:
        """Why the view's schema cannot name ``layout``'s columns (None: it can)."""
        for spec in layout.columns:
            known = self.view.column_types.get(spec.key)
            if known is None:
                return f"column {spec.name!r} is not in the query's schema"
            try:
                t = arrow_type(spec)
            except ValueError as exc:
                return str(exc)
            if widen(known[1], t) != known[1] and known[1] != VARIANT:
                return f"column {spec.name!r} is now {spec.kind}, wider than the query's schema holds"
        return None

    # -- the DDL of a range -----------------------------------------------------------------------------------
    def replay(self, state: TableState, statements: Iterable[DdlStatement]) -> _Replay:
        """Apply ``statements`` (in log order) to the table at ``state``, up to the first that stops the stream."""
        catalog = Catalog()
        history = TableHistory([state.version()])
        catalog.histories.append(history)
        # a table that does not exist yet is the one its name's CREATE makes: followed from there
        following = state.layout is not None or state.reason not in (*_DROPPED, NOT_YET)
        if following:
            catalog.by_name[(state.database, state.table)] = 0
        versions: list[Version] = []
        current = state
        for st in statements:
            n = len(history.versions)
            error = catalog.apply(st.query, st.schema, (file_number(st.file), st.pos))
            if not following:
                made = catalog.by_name.get((state.database, state.table))
                if made is None:
                    continue
                history, following, n = catalog.histories[made], True, 0
            if len(history.versions) == n:
                if error is not None and self._mentions(st.query, current.table):
                    return _Replay(versions, current, _Stop(st, f"a statement that may touch {current.database}."
                                                                f"{current.table} cannot be read ({error})",
                                                            _NO_RESTART))
                continue
            version = history.versions[-1]
            name = f"{version.database}.{version.table}"
            if version.layout is None:
                if version.reason in _DROPPED:
                    return _Replay(versions, current, _Stop(st, f"the table {name} was {version.reason}",
                                                            "a stream of this table ends here"))
                return _Replay(versions, current, _Stop(st, f"the layout of {name} after this statement is not "
                                                            f"known ({version.reason}); rows are never named by "
                                                            "a guess", _NO_RESTART))
            why = self.fits(version.layout)
            if why is not None:
                return _Replay(versions, current, _Stop(st, f"{name}: {why}"))
            versions.append(version)
            current = TableState(version.database, version.table, version.layout, None)
        return _Replay(versions, current, None)

    @staticmethod
    def _mentions(query: str, table: str) -> bool:
        return re.search(rf"(?<![\w$]){re.escape(table)}(?![\w$])", query, re.IGNORECASE) is not None

    def check_start(self, start: Offset) -> TableState:
        """The state at ``start``, refused when the query's schema cannot name it (a restart whose schema lost a
        layout the checkpoint needs)."""
        state = self.state_of(start)
        if state.layout is not None:
            why = self.fits(state.layout)
            if why is not None:
                here = BinlogPosition.from_offset(start)
                raise SchemaChangeError(self.source, f"{here.file}:{here.pos}", "(the checkpoint's layout)",
                                        f"{state.database}.{state.table}: {why}",
                                        "give the layout with schemaFrom=ddl:<path>, or start a new query")
        return state

    def latest(self, start: Offset, end: Offset,
               statements: Callable[[BinlogPosition, BinlogPosition], Sequence[DdlStatement]],
               boundary: Callable[[str, int], Offset]) -> Offset:
        """``end`` with the table's state there, or the boundary before the first statement of ``[start, end)``
        that stops the stream; raises :class:`SchemaChangeError` when that statement is at ``start`` itself."""
        state = self.check_start(start)
        first, last = BinlogPosition.from_offset(start), BinlogPosition.from_offset(end)
        if (first.file, first.pos) == (last.file, last.pos):
            return start
        replay = self.replay(state, statements(first, last))
        if replay.stop is None:
            return self.with_state(end, replay.state)
        st = replay.stop.statement
        if (file_number(st.file), st.group) <= (file_number(first.file), first.pos):
            raise SchemaChangeError(self.source, f"{st.file}:{st.pos}", st.query, replay.stop.reason,
                                    *(() if replay.stop.hint is None else (replay.stop.hint,)))
        log.info("%s: the range ends at %s:%d, before a statement that stops the stream (%s)", self.source,
                 st.file, st.group, replay.stop.reason)
        return self.with_state(boundary(st.file, st.group), replay.state)

    def versions(self, start: Offset, end: Offset,
                 statements: Callable[[BinlogPosition, BinlogPosition], Sequence[DdlStatement]]
                 ) -> tuple[Version, ...]:
        """The table's versions over ``[start, end)`` (a planned range: no statement in it stops the stream)."""
        state = self.state_of(start)
        first, last = BinlogPosition.from_offset(start), BinlogPosition.from_offset(end)
        replay = self.replay(state, statements(first, last))
        return (state.version(), *replay.versions)


_NO_RESTART = "the stream cannot go on past it: read the table from after it in a new query (startingPosition)"


def renumber(history: TableHistory, numbers: Sequence[int]) -> TableHistory:
    """A batch history (positions: index of the file in the files read) with binlog numbers instead."""
    return TableHistory([Version((numbers[v.position[0]], v.position[1]) if v.position[0] >= 0 else v.position,
                                 v.database, v.table, v.layout, v.reason) for v in history.versions])
