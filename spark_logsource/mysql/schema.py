"""Arrow schemas of the ``mysql-binlog`` format (``docs/formats/mysql-binlog.md`` "Output views").

``view=changes``: one row per changed row; ``view=events``: one row per event. With ``rowFormat=json`` the
variant columns (before/after/data) are JSON strings instead. In PERMISSIVE mode the corrupt-record column
(string) comes last. Timestamps are microseconds, UTC.
"""

from __future__ import annotations

import pyarrow as pa

from spark_logsource.arrow.columns import variant_field
from spark_logsource.errors import OptionError

__all__ = ["CHANGES_COLUMNS", "EVENTS_COLUMNS", "TIMESTAMP_TYPE", "binlog_schema"]

TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

#: (name, arrow type or None for a variant column)
CHANGES_COLUMNS: tuple[tuple[str, pa.DataType | None], ...] = (
    ("file", pa.string()), ("pos", pa.int64()), ("next_pos", pa.int64()), ("timestamp", TIMESTAMP_TYPE),
    ("server_id", pa.int64()), ("gtid", pa.string()), ("xid", pa.int64()), ("database", pa.string()),
    ("table", pa.string()), ("op", pa.string()), ("row_index", pa.int32()), ("before", None), ("after", None),
    ("query", pa.string()),
)
EVENTS_COLUMNS: tuple[tuple[str, pa.DataType | None], ...] = (
    ("file", pa.string()), ("pos", pa.int64()), ("next_pos", pa.int64()), ("timestamp", TIMESTAMP_TYPE),
    ("server_id", pa.int64()), ("event_type", pa.string()), ("event_type_code", pa.int32()),
    ("event_size", pa.int32()), ("flags", pa.int32()), ("gtid", pa.string()), ("database", pa.string()),
    ("table", pa.string()), ("query", pa.string()), ("data", None),
)


def binlog_schema(view: str, row_format: str, corrupt_column: str | None) -> pa.Schema:
    """The schema of every batch for ``view`` (changes|events) and ``row_format`` (variant|json)."""
    if view not in ("changes", "events"):
        raise OptionError("view", f"expected changes or events, got {view!r}")
    if row_format not in ("variant", "json"):
        raise OptionError("rowFormat", f"expected variant or json, got {row_format!r}")
    columns = CHANGES_COLUMNS if view == "changes" else EVENTS_COLUMNS
    fields = []
    for name, type_ in columns:
        if type_ is None:
            fields.append(variant_field(name) if row_format == "variant" else pa.field(name, pa.string()))
        else:
            fields.append(pa.field(name, type_))
    if corrupt_column is not None:
        if corrupt_column in {name for name, _ in columns}:
            raise OptionError("columnNameOfCorruptRecord", f"{corrupt_column!r} is already a column")
        fields.append(pa.field(corrupt_column, pa.string()))
    return pa.schema(fields)
