"""``view=table``'s walk on the driver: every binlog's DDL replayed into a :class:`~.table.ddl.Catalog`, and with
``schemaFrom=metadata`` the layouts the TABLE_MAPs describe (``docs/formats/mysql-typed.md``).

Only QUERY events (and TABLE_MAP / TRANSACTION_PAYLOAD for ``metadata``) are read; rows events are stepped over by
their headers, their bytes are the tasks' to check. A bad region follows the parse mode: FAILFAST raises, the
others log that a DDL statement may be missing and go on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from spark_logsource.errors import CorruptDataError
from spark_logsource.framing import BadRange
from spark_logsource.io.fs import FileEntry, display_name, open_input
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.binlog.payload import decode_payload_header, iter_payload_events, uncompress_payload
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.query_event import parse_query
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.read.transactions import QUERY_TYPES
from spark_logsource.mysql.table.ddl import Catalog, Position
from spark_logsource.mysql.table.layout import Layout, ValueMismatch, spec_from_table_map
from spark_logsource.options import ParseMode

__all__ = ["MetadataLayouts", "scan_files"]

log = logging.getLogger(__name__)

#: (position, table name, layout or the reason there is none) of each TABLE_MAP layout seen, per table name.
MetadataLayouts = dict[tuple[str, str], list[tuple[Position, Layout | None]]]


def _handle(mode: ParseMode, error: CorruptDataError, what: str) -> None:
    if mode is ParseMode.FAILFAST:
        raise error
    log.warning("%s: skipping a bad region (%s): %s", what, "a DDL statement may be missing", error)


def _table_map_layout(table_map: TableMap) -> Layout | None:
    try:
        return Layout(tuple(spec_from_table_map(c) for c in table_map.columns))
    except ValueMismatch:
        return None


def scan_files(files: Sequence[FileEntry], catalog: Catalog, options: BinlogReadOptions,
               table_maps: MetadataLayouts | None) -> None:
    """Replay every file's DDL into ``catalog`` (file ``n`` of ``files`` has positions ``(n, pos)``); with
    ``table_maps``, also collect the layouts the TABLE_MAPs describe."""
    mode = options.common.mode
    # a table's TABLE_MAP is the same bytes before each of its rows events: decoded once
    seen: dict[bytes, tuple[tuple[str, str], Layout | None]] = {}
    # the walk steps over rows events by their headers (no CRC, no body): the tasks check those
    wanted = frozenset(QUERY_TYPES) | (frozenset() if table_maps is None else {et.TABLE_MAP, et.TRANSACTION_PAYLOAD})

    def table_map_at(body: bytes, position: Position, table_id_size: int) -> None:
        assert table_maps is not None
        known = seen.get(body)
        if known is None:
            tm = parse_table_map(body, table_id_size=table_id_size)
            known = seen[body] = ((tm.database, tm.table), _table_map_layout(tm))
        name, layout = known
        runs = table_maps.setdefault(name, [])
        if not runs or runs[-1][1] != layout:
            runs.append((position, layout))

    for n, entry in enumerate(files):
        path = display_name(entry.uri)
        with open_input(entry.uri) as source:
            try:
                bf = BinlogFile(source, path, verify_checksums=options.common.verify_checksums)
            except CorruptDataError as exc:
                _handle(mode, exc, path)
                continue
            try:
                table_id_size = 4 if bf.fde.post_header_len(et.TABLE_MAP, 8) == 6 else 6
                query_post_header = bf.fde.post_header_len(et.QUERY, 13)
                for item in bf.events(only=wanted):
                    if isinstance(item, BadRange):
                        _handle(mode, item.error, path)
                        continue
                    code = item.type_code
                    try:
                        if code in QUERY_TYPES:
                            q = parse_query(item.body, compressed=code == et.MARIA_QUERY_COMPRESSED,
                                            post_header_len=query_post_header,
                                            max_uncompressed=options.max_uncompressed)
                            catalog.apply(q["query"], q["schema"], (n, item.pos))
                        elif table_maps is not None and code == et.TABLE_MAP:
                            table_map_at(bytes(item.body), (n, item.pos), table_id_size)
                        elif table_maps is not None and code == et.TRANSACTION_PAYLOAD:
                            head = decode_payload_header(item.body, path=path, offset=item.pos + HEADER_LEN)
                            payload = uncompress_payload(item.body, head, path=path, offset=item.pos + HEADER_LEN,
                                                         max_size=options.max_uncompressed)
                            for header, body in iter_payload_events(payload, path=path, offset=item.pos):
                                if header[1] == et.TABLE_MAP:
                                    table_map_at(bytes(body), (n, item.pos), table_id_size)
                    except CorruptDataError as exc:
                        _handle(mode, exc, path)
                    except BinlogDecodeError as exc:  # a QUERY or TABLE_MAP body (also one inside a payload)
                        _handle(mode, exc.at(path, item.pos + HEADER_LEN), path)
            finally:
                bf.close()
