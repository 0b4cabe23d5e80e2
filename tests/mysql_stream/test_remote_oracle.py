"""The live client against the server's own remote reader: what ``ReplicationClient`` receives over
COM_BINLOG_DUMP from a real MariaDB 10.11, decoded by our decoders, equals what ``mariadb-binlog
--read-from-remote-server -vv`` (MariaDB's own replication client and row printer) prints for the same range, value
for value for every row event; and the ``mysql-replication`` rows of that range are the same rows.

The range holds the all-types workload (``tests/support/mysql_types.py``: every column type, zero dates, updates
and deletes) and a writer's multi-statement transactions over several rotated files (16 KiB binlogs).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import spark_logsource
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.decode.rows import parse_rows_event
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.stream.client import ReplicationClient, parse_uri
from tests.mysql_stream.conftest import CDC_PASSWORD, CDC_USER, Writer
from tests.support.mysql_types import types_workload
from tests.support.oracle.mariadb_binlog import DecodedRows, compare_rows, run_remote_oracle
from tests.support.waiting import until

pytestmark = [pytest.mark.server]

DATABASE = "remote_oracle"


def _is_rows_event(type_code: int) -> bool:
    # the rows event codes mariadb-binlog prints rows for (as tests/support/oracle walks files)
    return 20 <= type_code <= 25 or 30 <= type_code <= 32 or type_code == 39 or 166 <= type_code <= 171


def _live_rows_events(server: Any, file: str, pos: int) -> dict[str, list[DecodedRows]]:
    """Every rows event our client receives from ``file:pos`` to the server's end, decoded, by binlog file."""
    client = ReplicationClient(parse_uri(server.uri, CDC_PASSWORD)).connect()
    maps: dict[int, TableMap] = {}
    out: dict[str, list[DecodedRows]] = {}
    try:
        for item in client.dump(file, pos, server_id=4343):
            ev, fde = item.event, item.fde
            assert ev.type_code != et.TRANSACTION_PAYLOAD, "this server does not compress its binlog"
            table_id_size = 4 if fde.post_header_len(et.TABLE_MAP, 8) == 6 else 6
            if ev.type_code == et.TABLE_MAP:
                tm = parse_table_map(ev.body, table_id_size=table_id_size)
                maps[tm.table_id] = tm
            elif _is_rows_event(ev.type_code):
                rows = parse_rows_event(ev.type_code, ev.body, post_header_len=fde.post_header_len(ev.type_code, 0),
                                        table_id_size=table_id_size, table_maps=maps)
                out.setdefault(item.file, []).append(DecodedRows(ev.pos, maps[rows.table_id], rows))
    finally:
        client.close()
    return out


def _types_then_writer(server: Any) -> None:
    server.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    server.execute(f"CREATE DATABASE {DATABASE}")
    try:
        types_workload(server, DATABASE)
    finally:  # the shared connection goes back to its defaults for the module's other tests
        server.execute("SET SESSION sql_mode = DEFAULT")
        server.execute("SET SESSION time_zone = DEFAULT")
    files_before = len(server.binlog_files())
    with Writer(server, seed=31) as writer:
        assert until(lambda: len(server.binlog_files()) >= files_before + 3), "the writer rotated the binlog"
        writer.wait_for(11)


def test_live_client_rows_equal_the_servers_remote_reader(stream_server: Any) -> None:
    stream_server.flush_logs()
    start_file, start_pos = (str(v) for v in stream_server.query("SHOW MASTER STATUS")[0][:2])
    _types_then_writer(stream_server)
    stream_server.flush_logs()  # every file of the range is closed: both readers see the same bytes
    names = [p.name for p in stream_server.binlog_files()]
    files = names[names.index(start_file):-1]
    assert len(files) >= 4
    ours = _live_rows_events(stream_server, start_file, int(start_pos))
    assert set(ours) <= set(names[names.index(start_file):])
    rows = values = 0
    oracle_counts: Counter[tuple[str, str, str, str]] = Counter()
    for i, name in enumerate(files):
        oracle = run_remote_oracle("127.0.0.1", stream_server.port, CDC_USER, CDC_PASSWORD, name,
                                   int(start_pos) if i == 0 else None)
        r, v = compare_rows(oracle, ours.get(name, []), f"{stream_server.uri}/{name}")
        rows += r
        values += v
        oracle_counts.update((name, o.db, o.table, o.op) for o in oracle.values())
    assert not any(ours.get(name) for name in names[-1:]), "no rows after the range"
    assert rows > 100 and values > 1000
    assert {db for _, db, _, _ in oracle_counts} >= {DATABASE, "shop"}
    # The format's rows over the same range: the same rows per file, table and operation.
    end = json.dumps({"file": files[-1], "pos": (stream_server.binlog_dir / files[-1]).stat().st_size})
    live = spark_logsource.read("mysql-replication", [], uri=stream_server.uri, password=CDC_PASSWORD,
                                serverId="4344", startingPosition=json.dumps({"file": start_file,
                                                                              "pos": int(start_pos)}),
                                endingPosition=end)
    got = Counter((f.rsplit("/", 1)[-1], db, table, op) for f, db, table, op in zip(
        *(live.column(c).to_pylist() for c in ("file", "database", "table", "op")), strict=True))
    assert got == oracle_counts
