"""Table layouts from SQL: ``CREATE`` / ``ALTER`` / ``RENAME`` / ``DROP TABLE`` replayed in log order.

``docs/formats/mysql-typed.md`` "DDL replay" states the rules. Statements are parsed by
:mod:`spark_logsource.mysql.table.statements` (sqlglot's MySQL dialect); a :class:`Catalog` holds the tables
known so far and, per table *object* (followed through renames), the :class:`Version` of its layout in force
from each DDL statement's position on. A statement that touches a table but cannot be understood fully (a
syntax sqlglot does not parse, ``CREATE TABLE ... SELECT``, an ALTER action not modelled) leaves that table's
layout *unknown* from there on, with the reason: its rows are then errors, never named by a guess.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, field

from sqlglot import TokenType, exp

from spark_logsource.mysql.table.layout import Layout
from spark_logsource.mysql.table.statements import (
    DdlError,
    alter_layout,
    create_layout,
    parse_statement,
    table_name,
    table_names,
    tokenize,
)

__all__ = ["DDL_FILE", "Catalog", "DdlError", "Position", "TableHistory", "Version", "parse_ddl_file"]

log = logging.getLogger(__name__)

#: (file number in log order, event position); a DDL file's statements come before every binlog (-1).
Position = tuple[int, int]
DDL_FILE = -1


# -- the catalog -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Version:
    """From ``position`` on the table is called ``database.table`` and has ``layout`` (None: unknown, see
    ``reason``; or dropped)."""

    position: Position
    database: str
    table: str
    layout: Layout | None
    reason: str | None = None


@dataclass(slots=True)
class TableHistory:
    """Every name and layout one table had, in log order."""

    versions: list[Version] = field(default_factory=list)

    def at(self, position: Position) -> Version | None:
        """The version in force for a row at ``position`` (None: the table did not exist yet)."""
        i = bisect.bisect_left([v.position for v in self.versions], position) - 1
        return self.versions[i] if i >= 0 else None

    def layouts(self) -> list[Layout]:
        return [v.layout for v in self.versions if v.layout is not None]

    def had_name(self, database: str, table: str) -> Position | None:
        """The last position from which the table was called ``database.table`` (None: never)."""
        found = None
        for v in self.versions:
            if (v.database, v.table) == (database, table):
                found = v.position
        return found


class Catalog:
    """The tables known at some point of the log, replayed statement by statement."""

    def __init__(self) -> None:
        self.histories: list[TableHistory] = []
        self.by_name: dict[tuple[str, str], int] = {}  # current name → index in histories

    def _record(self, obj: int, position: Position, name: tuple[str, str], layout: Layout | None,
                reason: str | None = None) -> None:
        self.histories[obj].versions.append(Version(position, name[0], name[1], layout, reason))

    def _object(self, name: tuple[str, str], position: Position) -> int:
        """The table called ``name`` now; a table first seen here gets an unknown layout from the start."""
        obj = self.by_name.get(name)
        if obj is None:
            obj = len(self.histories)
            self.histories.append(TableHistory())
            self._record(obj, (DDL_FILE - 1, 0), name, None, "no CREATE TABLE for it was read")
            self.by_name[name] = obj
        return obj

    def current(self, name: tuple[str, str]) -> Layout | None:
        obj = self.by_name.get(name)
        return self.histories[obj].versions[-1].layout if obj is not None else None

    def resolve(self, database: str, table: str) -> TableHistory | None:
        """The table that last carried the name ``database.table``."""
        best, best_pos = None, None
        for hist in self.histories:
            pos = hist.had_name(database, table)
            if pos is not None and (best_pos is None or pos > best_pos):
                best, best_pos = hist, pos
        return best

    def apply(self, sql: str, default_db: str | None, position: Position) -> str | None:
        """Replay one statement (QUERY event text, or a statement of a DDL file); the reason when it is a DDL
        statement that could not be replayed at all (its table names not read), else None."""
        stmt = parse_statement(sql)
        if stmt is None:
            return None
        try:
            self._apply(stmt, sql, default_db or None, position)
        except DdlError as exc:
            log.debug("DDL at %s not replayed: %s", position, exc)
            return str(exc)
        return None

    def _unknown(self, names: list[tuple[str, str]], position: Position, reason: str) -> None:
        for name in names:
            obj = self._object(name, position)
            self._record(obj, position, name, None, reason)

    def _apply(self, stmt: exp.Expr, sql: str, default_db: str | None, position: Position) -> None:
        if isinstance(stmt, exp.Create) and str(stmt.args.get("kind") or "").upper() == "TABLE":
            self._create(stmt, default_db, position)
        elif isinstance(stmt, exp.Alter) and str(stmt.args.get("kind") or "").upper() == "TABLE":
            self._alter(stmt, default_db, position)
        elif isinstance(stmt, exp.Drop) and str(stmt.args.get("kind") or "").upper() == "TABLE":
            if stmt.args.get("temporary"):
                return
            for table in stmt.args.get("tables") or ():
                name = table_name(table, default_db)
                obj = self.by_name.pop(name, None)
                if obj is not None:
                    self._record(obj, position, name, None, "dropped")
        elif isinstance(stmt, exp.Drop) and str(stmt.args.get("kind") or "").upper() in ("DATABASE", "SCHEMA"):
            db = stmt.this.name if isinstance(stmt.this, exp.Expression) else None
            for name in [n for n in self.by_name if n[0] == db]:
                self._record(self.by_name.pop(name), position, name, None, "dropped")
        elif isinstance(stmt, exp.Command):
            self._command(stmt, sql, default_db, position)

    def _create(self, stmt: exp.Create, default_db: str | None, position: Position) -> None:
        props = stmt.args.get("properties")
        if props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions):
            return  # temporary tables' rows are not logged in ROW format
        target = stmt.this.this if isinstance(stmt.this, exp.Schema) else stmt.this
        if not isinstance(target, exp.Table):
            return
        name = table_name(target, default_db)
        if stmt.args.get("exists") and name in self.by_name:
            return  # CREATE TABLE IF NOT EXISTS of a table that exists
        like = next((p for p in (props.expressions if props is not None else ()) if isinstance(p, exp.LikeProperty)),
                    None)
        layout: Layout | None
        reason = None
        if like is not None:
            source = table_name(like.this, default_db)
            layout = self.current(source)
            if layout is None:
                reason = f"CREATE TABLE ... LIKE {source[0]}.{source[1]}, whose layout is not known"
        else:
            try:
                layout = create_layout(stmt)
            except DdlError as exc:
                layout, reason = None, str(exc)
        obj = len(self.histories)
        self.histories.append(TableHistory())
        old = self.by_name.get(name)
        if old is not None:  # CREATE OR REPLACE
            self._record(old, position, name, None, "replaced")
        self.by_name[name] = obj
        self._record(obj, position, name, layout, reason)

    def _alter(self, stmt: exp.Alter, default_db: str | None, position: Position) -> None:
        name = table_name(stmt.this, default_db)
        if stmt.args.get("exists") and name not in self.by_name:
            return
        obj = self._object(name, position)
        actions = list(stmt.args.get("actions") or [])
        renames = [a for a in actions if isinstance(a, exp.AlterRename)]
        new_name = table_name(renames[-1].this, name[0]) if renames else name
        layout = self.histories[obj].versions[-1].layout
        reason = self.histories[obj].versions[-1].reason
        if layout is not None:
            try:
                layout = alter_layout(layout, actions, stmt.args.get("options") or [])
            except DdlError as exc:
                layout, reason = None, f"ALTER TABLE not replayed: {exc}"
        if new_name != name:
            self.by_name.pop(name, None)
            self.by_name[new_name] = obj
        self._record(obj, position, new_name, layout, reason)

    def _command(self, stmt: exp.Command, sql: str, default_db: str | None, position: Position) -> None:
        """Statements sqlglot parses as an opaque command: RENAME TABLE, and what it cannot parse."""
        tokens = tokenize(sql)
        words = [t.text.upper() for t in tokens[:4]]
        if words[:2] == ["RENAME", "TABLE"] or (words[:1] == ["RENAME"] and len(tokens) == 2):
            rest = tokens[1].text if len(tokens) == 2 else sql[tokens[1].start:]
            names = table_names(tokenize(rest), default_db)
            if len(names) % 2:
                raise DdlError(f"cannot read RENAME TABLE {rest!r}")
            for old, new in zip(names[::2], names[1::2], strict=True):
                obj = self._object(old, position)
                del self.by_name[old]
                self.by_name[new] = obj
                self._record(obj, position, new, self.histories[obj].versions[-1].layout,
                             self.histories[obj].versions[-1].reason)
            return
        if words[:1] == ["ALTER"]:
            table_at = next((k for k, w in enumerate(words) if w == "TABLE"), None)  # ALTER [ONLINE] TABLE
            if table_at is not None:
                skip = table_at + 1
                if [t.text.upper() for t in tokens[skip:skip + 2]] == ["IF", "EXISTS"]:
                    skip += 2
                name_tokens = tokens[skip:skip + 1]
                if len(tokens) > skip + 2 and tokens[skip + 1].token_type == TokenType.DOT:
                    name_tokens = tokens[skip:skip + 3]
                names = table_names(name_tokens, default_db)
                if names:
                    self._unknown(names[:1], position, f"ALTER TABLE not parsed: {sql[:200]!r}")
            return
        if words[:2] in (["CREATE", "TABLE"], ["CREATE", "OR"]):
            log.warning("CREATE TABLE at %s not parsed: %s", position, sql[:200])


def parse_ddl_file(text: str, default_db: str | None) -> Catalog:
    """A catalog holding the tables of a file of DDL statements (``mysqldump --no-data``: USE, CREATE TABLE, ...).

    Statements are split at the semicolons the tokenizer finds (not inside strings or comments)."""
    catalog = Catalog()
    tokens = tokenize(text)
    if not tokens and text.strip():
        raise DdlError("the DDL file cannot be tokenized")
    start = 0
    n = 0
    db = default_db
    for tok in [*tokens, None]:
        if tok is not None and tok.token_type != TokenType.SEMICOLON:
            continue
        end = tok.start if tok is not None else len(text)
        statement = text[start:end].strip()
        start = end + 1
        if not statement:
            continue
        words = statement.split(None, 2)
        if words and words[0].upper() == "USE" and len(words) > 1:
            db = words[1].strip("`;")
            continue
        catalog.apply(statement, db, (DDL_FILE, n))
        n += 1
    return catalog
