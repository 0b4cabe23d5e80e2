"""The parsed options of one binlog read (:class:`BinlogReadOptions`), shared by the file, tail and live readers."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from spark_logsource.mysql.binlog.compression import DEFAULT_MAX_UNCOMPRESSED
from spark_logsource.options import CommonOptions

__all__ = ["BinlogReadOptions"]


@dataclass(frozen=True)
class BinlogReadOptions:
    """Everything a binlog read needs besides the events themselves and the byte range.

    ``start_position`` / ``stop_position`` keep events whose ``pos`` is in ``[start, stop)``;
    ``start_datetime`` / ``stop_datetime`` keep events whose timestamp is in ``[start, stop)``; the other filters
    are mysqlbinlog's (see :mod:`.event_filters`).
    """

    view: str = "changes"
    row_format: str = "variant"
    common: CommonOptions = field(default_factory=CommonOptions)
    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: dt.datetime | None = None
    stop_datetime: dt.datetime | None = None
    server_ids: frozenset[int] | None = None
    databases: tuple[str, ...] | None = None
    tables: tuple[str, ...] | None = None
    ops: tuple[str, ...] | None = None
    event_types: tuple[str, ...] | None = None
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
    #: Fill the changes view's ``query`` column. The statement is repeated on every row it changed, so a
    #: 1000-row INSERT puts its whole text on 1000 rows; false (the default, as Debezium's ``include.query``)
    #: leaves the column null.
    include_query: bool = False
