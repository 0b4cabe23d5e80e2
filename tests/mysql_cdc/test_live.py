"""``view=table`` on ``mysql-replication`` through the LogStream calls (no Spark): the driver finds the DDL with a
dump of the range (SHOW BINLOG EVENTS without REPLICATION SLAVE); TRUNCATE is a row, a DROP TABLE stops the stream
naming it, a RENAME TABLE is followed."""

from __future__ import annotations

import json
from typing import Any

from spark_logsource.api import make_format
from tests.mysql_cdc.conftest import drive
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import rebuild, table_in_new_binlog


def _stream(server: StreamServer, table: str, first: str) -> Any:
    opts = {"uri": server.uri, "password": CDC_PASSWORD, "serverId": "4700", "view": "table", "table": table,
            "startingPosition": json.dumps({"file": first, "pos": 4})}
    return make_format("mysql-replication", server.uri, opts).stream()


def test_truncate_rename_table_and_drop(cdc_server: StreamServer) -> None:
    first, writer = table_in_new_binlog(cdc_server, "cdc.v", seed=8)
    writer.transactions(10)
    stream = _stream(cdc_server, "cdc.v", first)
    start = stream.initial_offset()
    rows, offset, error = drive(stream, start)
    assert error is None and rows
    cdc_server.execute("TRUNCATE TABLE cdc.v")
    writer.transactions(3)
    cdc_server.execute("RENAME TABLE cdc.v TO cdc.v2")
    writer.name = "cdc.v2"
    writer.transactions(3)
    more, offset, error = drive(stream, offset)
    assert error is None
    assert [r["op"] for r in more].count("t") == 1
    assert {r["source"]["table"] for r in more if r["op"] != "t"} == {"v", "v2"}
    assert offset["table"]["name"] == ["cdc", "v2"]
    seqs = [r["seq"] for r in rows + more]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert set(rebuild(rows + more)) == {r[0] for r in cdc_server.query("SELECT id FROM cdc.v2")}

    cdc_server.execute("DROP TABLE cdc.v2")
    _rows, stopped, error = drive(stream, offset)
    assert error is not None and "DROP TABLE" in str(error) and "was dropped" in str(error)
    assert error.position.startswith(stopped["file"].split(".")[0])


def test_batch_read_of_a_live_range_equals_the_files(cdc_server: StreamServer) -> None:
    import spark_logsource

    first, writer = table_in_new_binlog(cdc_server, "cdc.b", seed=17)
    writer.transactions(8)
    cdc_server.execute("ALTER TABLE cdc.b ADD COLUMN note VARCHAR(10)")
    writer.transactions(4)
    cdc_server.flush_logs()
    end_file, end_pos = cdc_server.query("SHOW MASTER STATUS")[0][:2]
    live = spark_logsource.read("mysql-replication", [], uri=cdc_server.uri, password=CDC_PASSWORD, view="table",
                                table="cdc.b", serverId="4800", startingPosition=json.dumps({"file": first, "pos": 4}),
                                endingPosition=json.dumps({"file": end_file, "pos": int(end_pos)}))
    names = [p.name for p in cdc_server.binlog_files()]
    files = spark_logsource.read("mysql-binlog", [str(cdc_server.binlog_dir / n)
                                                  for n in names[names.index(first):names.index(end_file)]],
                                 view="table", table="cdc.b")
    assert "note" in live.schema.field("after").type.names
    got = [(r["seq"], r["op"], r["before"], r["after"]) for r in live.to_pylist()]
    want = [(r["seq"], r["op"], r["before"], r["after"]) for r in files.to_pylist()]
    assert got == want and len(got) > 8


def test_the_drivers_ddl_dump_finds_what_show_binlog_events_lists(cdc_server: StreamServer) -> None:
    """The driver's walk of a range's DDL, a binlog dump decoding QUERY events only, against the server's own
    SHOW BINLOG EVENTS over the same binlogs: the same statements at the same positions, with the same GTID
    group starts and default databases, over whole files and over a range cut inside the first and the last."""
    from spark_logsource.mysql.stream.client import ReplicationClient, parse_uri
    from spark_logsource.mysql.table.stream import dump_statements, shown_statements

    first, writer = table_in_new_binlog(cdc_server, "cdc.w", seed=21)
    writer.transactions(5)
    cdc_server.execute("ALTER TABLE cdc.w ADD COLUMN extra INT")
    cdc_server.flush_logs()
    writer.transactions(5)
    cdc_server.execute("CREATE TABLE cdc.w_side (k INT PRIMARY KEY)")
    middle = int(cdc_server.query("SHOW MASTER STATUS")[0][1])
    middle_file = cdc_server.binlog_files()[-1].name
    cdc_server.execute("USE cdc")
    writer.transactions(3)
    cdc_server.execute("DROP TABLE cdc.w_side")
    cdc_server.execute("RENAME TABLE cdc.w TO cdc.w2")
    last_file, last_pos = cdc_server.query("SHOW MASTER STATUS")[0][:2]
    settings = parse_uri(cdc_server.uri, CDC_PASSWORD)
    with ReplicationClient(settings) as client:
        logs = client.binary_logs()
        whole = shown_statements(client, (first, 4), (str(last_file), int(last_pos)), logs)
        assert [s.query.split()[0].upper() for s in whole] == ["DROP", "CREATE", "ALTER", "CREATE", "DROP", "RENAME"]
        assert dump_statements(client, (first, 4), (str(last_file), int(last_pos)), logs, 4790) == whole
        assert dump_statements(client, (first, 4), None, logs, 4791)[:len(whole)] == whole
        cut = [s for s in whole if (s.file, s.pos) >= (middle_file, middle)]
        assert [s.query.split()[0].upper() for s in cut] == ["DROP", "RENAME"]
        assert dump_statements(client, (middle_file, middle), (str(last_file), int(last_pos)), logs, 4792) == cut
        before_rename = (whole[-1].file, whole[-1].group)
        assert dump_statements(client, (middle_file, middle), before_rename, logs, 4793) == cut[:1]
