"""The table's row changes between the snapshot's position T and a chunk's own position P (>= T), read from the
server's binlog with the replication client, for rolling the chunk back to T (``docs/formats/mysql-snapshot.md``).

Each change is ``(before, after)``: row tuples in the layout's column order, decoded as the binlog decoder gives
them (``mysql/decode/values.py``); None for the missing side of an insert or a delete. A DDL statement or a
TRUNCATE of the table in the window, a rows event whose columns are not the plan's, or an image without every
column (``binlog_row_image`` not FULL) stop the chunk with an error: its rows cannot be rolled back.
"""

from __future__ import annotations

import logging
from typing import Any

from spark_logsource.errors import CorruptDataError, DataLossError, SourceError
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.query_event import parse_query
from spark_logsource.mysql.decode.rows import parse_rows_event, peek_table_id
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.position import binlog_number
from spark_logsource.mysql.snapshot.plan import Chunk, SnapshotPlan
from spark_logsource.mysql.stream.client import ConnectionSettings, ReplicationClient
from spark_logsource.mysql.table.ddl import Catalog
from spark_logsource.mysql.table.layout import compatible_binlog_type, enrich_table_map

__all__ = ["Change", "read_window"]

log = logging.getLogger(__name__)

Row = tuple[Any, ...]
Change = tuple[Row | None, Row | None]
_QUERY_TYPES = (et.QUERY, et.MARIA_QUERY_COMPRESSED)


def _order(file: str, pos: int) -> tuple[int, int]:
    return binlog_number(file)[1], pos


class _Window:
    """The walk over the window's events: table maps of the table, its changes, DDL watch."""

    def __init__(self, plan: SnapshotPlan, chunk: Chunk, source: str) -> None:
        self.plan = plan
        self.chunk = chunk
        self.source = source
        self.maps: dict[int, TableMap] = {}
        self.changes: list[Change] = []
        # the table's name as a catalog object: any DDL statement that touches it adds a version
        self.catalog = Catalog()
        self.catalog.apply(f"CREATE TABLE `{plan.database}`.`{plan.table}` (snapshot_placeholder INT)", None,
                           (-1, 0))

    def fail(self, where: str, why: str) -> SourceError:
        return SourceError(self.source, where, f"chunk {self.chunk.index} of the snapshot of {self.plan.name} at "
                                               f"{self.plan.position}: {why}; the snapshot must start again")

    def bad(self, exc: BinlogDecodeError) -> CorruptDataError:
        # a body handed over by the replication client: the offset is the one in its event
        return exc.at(self.source, HEADER_LEN)

    def query(self, body: bytes, compressed: bool, post_header_len: int, where: str) -> None:
        try:
            q = parse_query(body, compressed=compressed, post_header_len=post_header_len)
        except BinlogDecodeError as exc:
            raise self.bad(exc) from None
        sql, schema = str(q["query"]), q["schema"] or None
        words = sql.replace("`", " ").replace(".", " . ").split()
        if words and words[0].upper() == "TRUNCATE":
            name = [w for w in words[1:] if w.upper() != "TABLE"]
            db, table = (name[0], name[2]) if len(name) >= 3 and name[1] == "." else (schema, name[0] if name
                                                                                       else "")
            if (str(db).lower(), table.lower()) == (self.plan.database.lower(), self.plan.table.lower()):
                raise self.fail(where, f"the table was truncated in between ({sql[:200]!r})")
        history = self.catalog.resolve(self.plan.database, self.plan.table)
        before = len(history.versions) if history is not None else 0
        self.catalog.apply(sql, schema, (0, 0))
        history = self.catalog.resolve(self.plan.database, self.plan.table)
        if history is None or len(history.versions) != before:
            raise self.fail(where, f"a DDL statement changed the table in between ({sql[:200]!r})")

    def table_map(self, body: bytes, table_id_size: int, where: str) -> None:
        try:
            table_map = parse_table_map(body, table_id_size=table_id_size)
        except BinlogDecodeError as exc:
            raise self.bad(exc) from None
        if (table_map.database, table_map.table) != (self.plan.database, self.plan.table):
            self.maps.pop(table_map.table_id, None)
            return
        layout = self.plan.layout
        if len(table_map.columns) != len(layout.columns) or not all(
                compatible_binlog_type(spec, col) for spec, col in zip(layout.columns, table_map.columns,
                                                                        strict=True)):
            raise self.fail(where, "its rows have other columns than the snapshot's (a schema change)")
        self.maps[table_map.table_id] = enrich_table_map(table_map, layout)

    def rows(self, type_code: int, body: bytes, post_header_len: int, table_id_size: int, where: str) -> None:
        try:
            table_id = peek_table_id(body, table_id_size=table_id_size)
            table_map = self.maps.get(table_id)
            if table_map is None:
                return
            decoded = parse_rows_event(type_code, body, post_header_len=post_header_len, table_id_size=table_id_size,
                                       table_maps={table_id: table_map})
        except BinlogDecodeError as exc:
            raise self.bad(exc) from None
        keys = [table_map.key_for(i) for i in range(len(table_map.columns))]
        for before, after in decoded.rows:
            self.changes.append((self._row(before, keys, where), self._row(after, keys, where)))

    def _row(self, image: dict[str, Any] | None, keys: list[str], where: str) -> Row | None:
        if image is None:
            return None
        if len(image) != len(keys):
            raise self.fail(where, "a row image lacks columns (binlog_row_image is not FULL): the chunk cannot be "
                                   "rolled back")
        return tuple(image[k] for k in keys)


def read_window(settings: ConnectionSettings, plan: SnapshotPlan, chunk: Chunk, stop: tuple[str, int],
                server_id: int, *, verify_checksums: bool = True) -> list[Change]:
    """The table's changes from the plan's position to ``stop`` (a chunk's own snapshot position), in log order."""
    window = _Window(plan, chunk, f"{settings.source}/{plan.file}")
    end = _order(*stop)
    where = plan.position
    try:
        with ReplicationClient(settings, verify_checksums=verify_checksums) as client:
            reached = _order(plan.file, plan.pos) >= end
            for item in client.dump(plan.file, plan.pos, server_id):
                ev = item.event
                where = f"{item.file}:{ev.pos}"
                if _order(item.file, ev.pos) >= end:
                    reached = True
                    break
                fde = item.fde
                table_id_size = 4 if fde.post_header_len(et.TABLE_MAP, 8) == 6 else 6
                code = ev.type_code
                if code in _QUERY_TYPES:
                    compressed = code == et.MARIA_QUERY_COMPRESSED
                    window.query(bytes(ev.body), compressed, fde.post_header_len(et.QUERY, 13), where)
                elif code == et.TABLE_MAP:
                    window.table_map(bytes(ev.body), table_id_size, where)
                elif code in et.ROWS_TYPES:
                    window.rows(code, bytes(ev.body), fde.post_header_len(code, 10), table_id_size, where)
                elif code == et.TRANSACTION_PAYLOAD:
                    raise window.fail(where, "a compressed transaction payload (MySQL) is not read here")
                if _order(item.file, ev.next_pos) >= end:
                    reached = True  # the window's last event: the dump need not go on to the server's end
                    break
            if not reached:
                raise window.fail(where, f"the server's binlog ended before {stop[0]}:{stop[1]}")
    except DataLossError as exc:
        raise DataLossError(settings.source, f"the binlog from {plan.position} to {stop[0]}:{stop[1]}",
                            hint=f"chunk {chunk.index} of the snapshot of {plan.name} needs it to roll back to "
                                 f"{plan.position} ({exc}); the snapshot must start again") from None
    log.debug("%s: chunk %d of %s: %d change(s) of the table between %s and %s:%d", settings.source, chunk.index,
              plan.name, len(window.changes), plan.position, stop[0], stop[1])
    return window.changes
