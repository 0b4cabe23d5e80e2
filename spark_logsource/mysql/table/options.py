"""The options of ``view=table`` (``table``, ``schemaFrom``, ``password``), checked when the format is made.

A module of its own so that reading the options does not import the typed view and its DDL parser (sqlglot):
every ``mysql-binlog`` read parses them, few use ``view=table``. ``docs/formats/mysql-typed.md`` describes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_logsource.errors import OptionError
from spark_logsource.mysql.stream.client import parse_uri
from spark_logsource.net import Secret

__all__ = ["SCHEMA_SOURCES", "TableOptions", "parse_state_options", "parse_table_options"]

SCHEMA_SOURCES = ("binlog", "metadata", "ddl:<path>", "mysql://user@host:port")


@dataclass(frozen=True, slots=True)
class TableOptions:
    database: str
    table: str
    schema_from: str  # binlog | metadata | ddl | server
    ddl_path: str | None = None
    uri: str | None = None
    password: Secret | None = field(default=None, repr=False)


def parse_table_options(view: str, table: str | None, schema_from: str | None,
                        password: str | None = None) -> TableOptions | None:
    """``table`` (``db.table``, one table), ``schemaFrom`` and ``password`` (for a server); None when ``view`` is
    not ``table``."""
    if view not in ("table", "state"):
        for name, value in (("table", table), ("schemaFrom", schema_from), ("password", password)):
            if value is not None:
                raise OptionError(name, "applies to view=table only (and view=state)")
        return None
    if not table:
        raise OptionError("table", f"view={view} needs the option table (db.table; one table: several tables are "
                                   "several DataFrames)")
    if "," in table or "*" in table or "?" in table:
        raise OptionError("table", f"expected one table db.table, got {table!r} (several tables are several "
                                   "DataFrames)")
    db, dot, name = table.replace("`", "").partition(".")
    if not dot or not db or not name:
        raise OptionError("table", f"expected db.table, got {table!r}")
    source = (schema_from or "binlog").strip()
    if source.lower().startswith(("mysql://", "mariadb://")):
        parse_uri(source, password)  # checked now: a bad URI fails at .load()
        return TableOptions(db, name, "server", uri=source, password=Secret(password))
    if password is not None:
        raise OptionError("password", "applies to schemaFrom=mysql://user@host:port only")
    if source.lower() in ("binlog", "metadata"):
        return TableOptions(db, name, source.lower())
    if source.lower().startswith("ddl:") and len(source) > 4:
        return TableOptions(db, name, "ddl", source[4:])
    raise OptionError("schemaFrom", f"expected one of {', '.join(SCHEMA_SOURCES)}, got {source!r}")


def parse_state_options(view: str, as_of: str | None, partitions: int | None) -> tuple[str | None, int | None]:
    """``asOf`` and ``statePartitions`` of ``view=state`` (``asOf`` is read when the view is built, at
    ``.load()``: :mod:`.state`)."""
    if view != "state":
        for name, value in (("asOf", as_of), ("statePartitions", partitions)):
            if value is not None:
                raise OptionError(name, "applies to view=state only")
    return as_of, partitions
