"""The small values a typed MySQL stream passes between its driver and its tasks: a DDL statement of the log and
a slice with the table's versions over its range. Kept apart from the DDL replay (and its SQL parser), so the
formats that name them import nothing heavy (``docs/formats/mysql-typed.md`` "Streaming")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_logsource.mysql.table.ddl import Version

__all__ = ["DdlStatement", "TableSlice"]


@dataclass(frozen=True, slots=True)
class DdlStatement:
    """A statement of the log: its QUERY event at ``file:pos``, whose transaction starts at ``group`` (the
    boundary before it), with the event's default database."""

    file: str
    pos: int
    group: int
    schema: str | None
    query: str


@dataclass(frozen=True, slots=True)
class TableSlice:
    """A slice of the stream (the plain stream's own) and the table's versions over its range."""

    inner: Any
    versions: tuple[Version, ...]

    def __repr__(self) -> str:
        return f"TableSlice({self.inner!r}, {len(self.versions)} versions)"
