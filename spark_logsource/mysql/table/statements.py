"""DDL statements read with sqlglot: a ``CREATE TABLE``'s layout, an ``ALTER TABLE``'s effect on one, table names.

``docs/formats/mysql-typed.md`` "DDL replay" states the rules; :mod:`spark_logsource.mysql.table.ddl` replays the
statements in log order. Statements are parsed with sqlglot's MySQL dialect, with MariaDB's spatial and INET
types added to its tokenizer. What cannot be read raises :class:`DdlError` (the replay then marks the table's
layout unknown, with the reason).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError

from spark_logsource.mysql.table.layout import ColumnSpec, Layout

__all__ = ["DdlError", "alter_layout", "column_spec", "create_layout", "parse_statement", "table_name", "table_names",
           "tokenize", "truncated_table"]

_DDL_WORDS = frozenset({"CREATE", "ALTER", "RENAME", "DROP"})


class _Dialect(MySQL):
    """MySQL's dialect plus the column types MariaDB adds (spatial subtypes are GEOMETRY in the binlog)."""

    class Tokenizer(MySQL.Tokenizer):
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **MySQL.Tokenizer.KEYWORDS,
            **{word: TokenType.GEOMETRY for word in ("POINT", "LINESTRING", "POLYGON", "MULTIPOINT",
                                                     "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION")},
            "INET4": TokenType.IPV4,
            "INET6": TokenType.IPV6,
        }


_DIALECT = _Dialect()
_T = exp.DataType.Type
_INTS = {_T.TINYINT: (1, False), _T.UTINYINT: (1, True), _T.SMALLINT: (2, False), _T.USMALLINT: (2, True),
         _T.MEDIUMINT: (3, False), _T.UMEDIUMINT: (3, True), _T.INT: (4, False), _T.UINT: (4, True),
         _T.BIGINT: (8, False), _T.UBIGINT: (8, True), _T.BOOLEAN: (1, False), _T.SERIAL: (8, True)}
_TEXT = {_T.CHAR: ("char", False), _T.NCHAR: ("char", False), _T.VARCHAR: ("char", False),
         _T.NVARCHAR: ("char", False), _T.BINARY: ("char", True), _T.VARBINARY: ("char", True),
         _T.TEXT: ("blob", False), _T.TINYTEXT: ("blob", False), _T.MEDIUMTEXT: ("blob", False),
         _T.LONGTEXT: ("blob", False), _T.BLOB: ("blob", True), _T.TINYBLOB: ("blob", True),
         _T.MEDIUMBLOB: ("blob", True), _T.LONGBLOB: ("blob", True),
         # MariaDB's UUID, INET4 and INET6 are fixed-size binary strings in the binlog
         _T.UUID: ("char", True), _T.IPV4: ("char", True), _T.IPV6: ("char", True)}
_SIMPLE = {_T.DATE: "date", _T.DATETIME: "datetime", _T.TIMESTAMP: "timestamp", _T.TIMESTAMPTZ: "timestamp",
           _T.TIMESTAMPLTZ: "timestamp", _T.TIME: "time", _T.YEAR: "year", _T.JSON: "json",
           _T.GEOMETRY: "geometry", _T.VECTOR: "vector", _T.DOUBLE: "double", _T.UDOUBLE: "double"}


class DdlError(ValueError):
    """A statement touching a table that the replay cannot apply (the table's layout becomes unknown)."""


def _charset_of(name: str) -> str:
    """A character set name from a character set or collation name (``latin1_swedish_ci`` → ``latin1``)."""
    name = name.strip("`'\"").lower()
    return name if name == "binary" else name.split("_", 1)[0]


def _number(node: Any) -> int:
    value: Any = node.this if isinstance(node, exp.DataTypeParam) else node
    return int(value.name if isinstance(value, exp.Expression) else value)


def _is_json_check(constraint: Any, column: str) -> bool:
    """``CHECK (json_valid(column))`` on the column itself."""
    if not isinstance(constraint, exp.CheckColumnConstraint) or not isinstance(constraint.this, exp.Func):
        return False
    func = constraint.this
    name = func.name if isinstance(func, exp.Anonymous) else func.sql_name()
    args = func.expressions if isinstance(func, exp.Anonymous) else [func.this]
    return (name.lower() == "json_valid" and len(args) == 1 and isinstance(args[0], exp.Column)
            and args[0].name.lower() == column.lower())


def column_spec(cd: exp.ColumnDef) -> ColumnSpec:
    """One ``ColumnDef`` of a CREATE / ALTER as a :class:`ColumnSpec`."""
    name = cd.name
    kind_node = cd.args.get("kind")
    if not isinstance(kind_node, exp.DataType):
        raise DdlError(f"column {name!r} has no type")
    t = kind_node.this
    params = kind_node.expressions or []
    constraints = [c.args.get("kind") for c in cd.args.get("constraints") or []]
    charset = None
    nullable = True
    for c in constraints:
        if isinstance(c, exp.CharacterSetColumnConstraint | exp.CollateColumnConstraint):
            charset = _charset_of(c.this.name if isinstance(c.this, exp.Expression) else str(c.this))
        elif isinstance(c, exp.PrimaryKeyColumnConstraint) or (
                isinstance(c, exp.NotNullColumnConstraint) and not c.args.get("allow_null")):
            nullable = False
    if t == _T.LONGTEXT and any(_is_json_check(c, name) for c in constraints):
        # MariaDB's JSON is LONGTEXT with CHECK (json_valid(col)): what SHOW CREATE TABLE and mysqldump print
        return ColumnSpec(name, "json", charset=charset, nullable=nullable)
    if t in _INTS:
        size, unsigned = _INTS[t]
        return ColumnSpec(name, "int", unsigned=unsigned, size=size, nullable=nullable)
    if t == _T.FLOAT:
        # FLOAT(p) with 25 <= p <= 53 is a DOUBLE; FLOAT(m, d) and FLOAT are single precision
        kind = "double" if len(params) == 1 and _number(params[0]) > 24 else "float"
        return ColumnSpec(name, kind, nullable=nullable)
    if t in (_T.DECIMAL, _T.UDECIMAL, _T.BIGDECIMAL):
        precision = _number(params[0]) if params else 10
        scale = _number(params[1]) if len(params) > 1 else 0
        return ColumnSpec(name, "decimal", precision=precision, scale=scale, nullable=nullable)
    if t == _T.BIT:
        return ColumnSpec(name, "bit", size=_number(params[0]) if params else 1, nullable=nullable)
    if t in (_T.ENUM, _T.SET):
        values = tuple(p.name for p in params)
        return ColumnSpec(name, "enum" if t == _T.ENUM else "set", values=values, charset=charset,
                          nullable=nullable)
    if t in _TEXT:
        kind, binary = _TEXT[t]
        binary = binary or charset == "binary"
        return ColumnSpec(name, kind, binary=binary, charset=None if binary else charset, nullable=nullable)
    if t in _SIMPLE:
        return ColumnSpec(name, _SIMPLE[t], charset=charset, nullable=nullable)
    raise DdlError(f"column {name!r}: type {kind_node.sql('mysql')} is not modelled")


def table_name(table: exp.Table, default_db: str | None) -> tuple[str, str]:
    db = table.db or default_db
    if not db:
        raise DdlError(f"table {table.name!r} without a database and no default database")
    return db, table.name


def _default_charset(properties: Any) -> str | None:
    for prop in (properties.expressions if properties is not None else ()):
        if isinstance(prop, exp.CharacterSetProperty | exp.CollateProperty):
            return _charset_of(prop.this.name if isinstance(prop.this, exp.Expression) else str(prop.this))
    return None


def create_layout(stmt: exp.Create) -> Layout:
    """The layout a ``CREATE TABLE name (columns...) [options]`` declares."""
    schema = stmt.this
    if not isinstance(schema, exp.Schema):
        raise DdlError("CREATE TABLE without a column list")
    if stmt.args.get("expression") is not None:
        raise DdlError("CREATE TABLE ... SELECT: the selected columns are not in the statement")
    columns = tuple(column_spec(cd) for cd in schema.expressions if isinstance(cd, exp.ColumnDef))
    if not columns:
        raise DdlError("CREATE TABLE without columns")
    key: tuple[str, ...] = ()
    for node in schema.expressions:
        key = _primary_key(node) or key
    return Layout(columns, _default_charset(stmt.args.get("properties")), key)


def _primary_key(node: Any) -> tuple[str, ...]:
    """The column names of the PRIMARY KEY a column definition or a table constraint declares (empty: none)."""
    if isinstance(node, exp.ColumnDef):
        kinds = [c.args.get("kind") for c in node.args.get("constraints") or []]
        return (node.name,) if any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in kinds) else ()
    pk = node if isinstance(node, exp.PrimaryKey) else node.find(exp.PrimaryKey)
    if pk is None:
        return ()
    return tuple((e if isinstance(e, exp.Identifier) else e.find(exp.Identifier)).name for e in pk.expressions)


def _rename_key(key: tuple[str, ...], old: str, new: str | None) -> tuple[str, ...]:
    """The primary key after column ``old`` is renamed to ``new`` (None: dropped, which leaves the key's other
    columns, as the servers do)."""
    out = tuple(new if k.lower() == old.lower() else k for k in key)
    return tuple(k for k in out if k is not None)


def _insert(columns: list[ColumnSpec], spec: ColumnSpec, position: Any) -> None:
    if position is None:
        columns.append(spec)
        return
    where = position.args.get("position")
    if str(where).upper() == "FIRST":
        columns.insert(0, spec)
        return
    anchor = position.this.name.lower()
    i = next((i for i, c in enumerate(columns) if c.key == anchor), None)
    if i is None:
        raise DdlError(f"AFTER {position.this.name!r}: no such column")
    columns.insert(i + 1, spec)


def _find(columns: list[ColumnSpec], name: str) -> int | None:
    key = name.lower()
    return next((i for i, c in enumerate(columns) if c.key == key), None)


_IGNORED_ACTIONS = (exp.AddConstraint, exp.DropPrimaryKey, exp.AlterColumn, exp.RenameIndex)


def alter_layout(layout: Layout, actions: list[Any], options: list[Any]) -> Layout:
    """``layout`` after the actions of one ``ALTER TABLE`` (a rename is the caller's)."""
    columns = list(layout.columns)
    default = layout.default_charset
    key = layout.primary_key
    renames: list[tuple[str, str]] = []
    filled: list[str] = []
    for action in actions:
        if isinstance(action, exp.ColumnDef):
            spec = column_spec(action)
            if _find(columns, spec.name) is not None:
                if action.args.get("exists"):
                    continue  # ADD COLUMN IF NOT EXISTS of a column that is there
                raise DdlError(f"ADD COLUMN {spec.name!r}: the column exists")
            _insert(columns, spec, action.args.get("position"))
            key = _primary_key(action) or key
            if not spec.nullable or _has_default(action):
                filled.append(spec.name)
        elif isinstance(action, exp.Drop):
            if str(action.args.get("kind") or "").upper() != "COLUMN":
                continue  # DROP INDEX / KEY / CONSTRAINT / FOREIGN KEY: not a column
            for col in action.args.get("tables") or ():
                i = _find(columns, col.name)
                if i is None:
                    if action.args.get("exists"):
                        continue
                    raise DdlError(f"DROP COLUMN {col.name!r}: no such column")
                del columns[i]
                key = _rename_key(key, col.name, None)
        elif isinstance(action, exp.ModifyColumn):  # MODIFY name def / CHANGE old new def
            cd = action.this
            old = action.args.get("rename_from")
            old_name = old.name if old is not None else cd.name
            i = _find(columns, old_name)
            if i is None:
                raise DdlError(f"MODIFY / CHANGE {old_name!r}: no such column")
            spec = column_spec(cd)
            key = _primary_key(cd) or _rename_key(key, old_name, spec.name)
            if old_name.lower() != spec.key:
                renames.append((old_name, spec.name))
            position = cd.args.get("position")
            if position is None:
                columns[i] = spec
            else:
                del columns[i]
                _insert(columns, spec, position)
        elif isinstance(action, exp.RenameColumn):
            i = _find(columns, action.this.name)
            if i is None:
                raise DdlError(f"RENAME COLUMN {action.this.name!r}: no such column")
            columns[i] = ColumnSpec(**{**_fields(columns[i]), "name": action.args["to"].name})
            key = _rename_key(key, action.this.name, action.args["to"].name)
            renames.append((action.this.name, action.args["to"].name))
        elif isinstance(action, exp.DropPrimaryKey):
            key = ()
        elif isinstance(action, exp.AddConstraint) and _primary_key(action):
            key = _primary_key(action)
        elif isinstance(action, (exp.AlterRename, *_IGNORED_ACTIONS)):
            continue
        else:
            raise DdlError(f"ALTER TABLE action {action.sql('mysql')!r} is not modelled")
    for option in options or ():
        if isinstance(option, exp.CharacterSetProperty | exp.CollateProperty):
            default = _charset_of(option.this.name if isinstance(option.this, exp.Expression) else str(option.this))
    return Layout(tuple(columns), default, key, tuple(renames), tuple(filled))


def _has_default(cd: exp.ColumnDef) -> bool:
    """A ``DEFAULT`` other than ``DEFAULT NULL`` among the column's constraints."""
    return any(isinstance(k, exp.DefaultColumnConstraint) and not isinstance(k.this, exp.Null)
               for k in (c.args.get("kind") for c in cd.args.get("constraints") or []))


def _fields(spec: ColumnSpec) -> dict[str, Any]:
    return {f: getattr(spec, f) for f in spec.__slots__}


# -- statements ------------------------------------------------------------------------------------------------
#: Leading comments, and MariaDB's ``SET STATEMENT var = value [, ...] FOR`` prefix, which the server logs with the
#: statement it applies to: what comes after them is the statement a replay reads.
_PREFIX_RE = re.compile(r"\A(?:\s+|/\*(?!!).*?\*/|--[^\n]*(?:\n|\Z)|#[^\n]*(?:\n|\Z))*"
                        r"(?:SET\s+STATEMENT\s+.*?\s+FOR\s+(?=(?:CREATE|ALTER|RENAME|DROP|TRUNCATE)\b))?",
                        re.IGNORECASE | re.DOTALL)


def without_prefix(sql: str) -> str:
    """``sql`` without its leading comments and ``SET STATEMENT ... FOR`` prefix (``docs/formats/mysql-typed.md``)."""
    return sql[_PREFIX_RE.match(sql).end():]  # type: ignore[union-attr]  # the pattern matches every string


def _first_word(sql: str) -> str:
    text = sql.lstrip()
    while text.startswith("/*") and not text.startswith("/*!"):
        end = text.find("*/")
        if end < 0:
            return ""
        text = text[end + 2:].lstrip()
    word = text[:8].split(None, 1)
    return word[0].upper() if word else ""


def tokenize(sql: str) -> list[Any]:
    try:
        return list(_DIALECT.tokenize(sql))
    except SqlglotError:
        return []


def table_names(tokens: list[Any], default_db: str | None) -> list[tuple[str, str]]:
    """``db.t`` / ``t`` names separated by TO or commas, from tokens (the list of a RENAME TABLE)."""
    names: list[tuple[str, str]] = []
    parts: list[str] = []

    def close() -> None:
        if not parts:
            return
        if len(parts) > 2:
            raise DdlError(f"cannot read the table name {'.'.join(parts)!r}")
        db = parts[0] if len(parts) == 2 else default_db
        if not db:
            raise DdlError(f"table {parts[-1]!r} without a database and no default database")
        names.append((db, parts[-1]))
        parts.clear()

    for tok in tokens:
        quoted = tok.token_type == TokenType.IDENTIFIER
        if tok.token_type == TokenType.DOT:
            continue
        if tok.token_type == TokenType.SEMICOLON:
            break
        if tok.token_type == TokenType.COMMA or (not quoted and tok.text.upper() == "TO"):
            close()
            continue
        if not quoted and tok.token_type == TokenType.TABLE and not names and not parts:
            continue
        parts.append(tok.text)
    close()
    return names


def parse_statement(sql: str) -> exp.Expr | None:
    """The parsed DDL statement, None when it is not one the replay looks at (DML, BEGIN, SET, ...)."""
    sql = without_prefix(sql)
    word = _first_word(sql)
    if word not in _DDL_WORDS:
        return None
    head = [w.upper() for w in sql.split(None, 6)[:6]]
    if "TABLE" not in head and "DATABASE" not in head and "SCHEMA" not in head:
        return None  # CREATE TRIGGER / VIEW / FUNCTION / INDEX, DROP USER, ...: not a table's layout
    if word == "RENAME":  # sqlglot reads RENAME TABLE as an opaque command (with a warning): say so directly
        return exp.Command(this="RENAME", expression=exp.Literal.string(sql))
    if word == "ALTER":
        words = sql.split(None, 3)[1:3]
        if words and words[0].upper() in ("ONLINE", "IGNORE"):  # MariaDB's; sqlglot parses the ALTER without it
            tokens = tokenize(sql)
            if len(tokens) > 1 and tokens[1].text.upper() == words[0].upper():
                sql = sql[:tokens[1].start] + sql[tokens[1].end + 1:]
    try:
        return sqlglot.parse_one(sql, dialect=_DIALECT)
    except SqlglotError as exc:
        return exp.Command(this="UNPARSED", expression=exp.Literal.string(str(exc).splitlines()[0]))


def truncated_table(sql: str, default_db: str | None) -> tuple[str, str] | None:
    """The table a ``TRUNCATE [TABLE] name`` statement empties (None: another statement, or a name not read)."""
    sql = without_prefix(sql)
    if _first_word(sql) != "TRUNCATE":
        return None
    tokens = tokenize(sql)
    if len(tokens) < 2:
        return None
    try:
        names = table_names(tokens[1:], default_db)
    except DdlError:
        return None
    return names[0] if len(names) == 1 else None
