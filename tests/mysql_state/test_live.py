"""``view=state`` on ``mysql-replication``: the state workload written on the session's streaming MariaDB 10.11
(small binlogs: many rotations), read over the replication protocol, equals the server's ``SELECT *`` and
``mysql-binlog``'s view=state over the server's own binlog files, at the end and as of a middle point; in Spark as in
the Arrow API; and a table whose creation was purged is refused as the file source refuses it.

The last test purges the server's binlogs: it stays last in the module."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import OptionError
from tests.mysql_state.conftest import DB, StateWorkload, _write, as_utc
from tests.mysql_state.test_state import assert_same_rows
from tests.support.servers.mariadb_stream import CDC_PASSWORD, StreamServer

SERVER_ID = "4900"


@pytest.fixture(scope="module")
def live(stream_mariadb: StreamServer) -> tuple[StreamServer, StateWorkload]:
    stream_mariadb.checkout({DB: True})
    out = StateWorkload([])
    _write(stream_mariadb, out)
    out.files = stream_mariadb.binlog_files()
    assert len(out.files) >= 3  # several binlogs: the FLUSH in the middle and the server's small max_binlog_size
    return stream_mariadb, out


def _options(server: StreamServer, table: str, **options: Any) -> dict[str, Any]:
    return {"uri": server.uri, "password": CDC_PASSWORD, "serverId": SERVER_ID, "view": "state",
            "table": f"{DB}.{table}", **options}


def read_live(server: StreamServer, table: str, **options: Any) -> pa.Table:
    return spark_logsource.read("mysql-replication", [], **_options(server, table, **options))


def read_files(w: StateWorkload, table: str, **options: Any) -> pa.Table:
    return spark_logsource.read("mysql-binlog", [str(f) for f in w.files], view="state", table=f"{DB}.{table}",
                                **options)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    for r in rows:
        assert r.pop("_corrupt_record") is None
    return rows


def _same_state(live_table: pa.Table, file_table: pa.Table) -> None:
    assert live_table.schema == file_table.schema
    assert sorted(map(repr, live_table.to_pylist())) == sorted(map(repr, file_table.to_pylist()))


@pytest.mark.parametrize("table", ["items", "tally", "gone"])
def test_live_state_at_the_end_equals_select_and_the_files(live: tuple[StreamServer, StateWorkload],
                                                            table: str) -> None:
    server, w = live
    assert w.final is not None
    ours = read_live(server, table, statePartitions=3)
    assert_same_rows(_rows(ours), w.final.tables[table], f"live {table} at the end")
    assert ours.num_rows > 0
    _same_state(ours, read_files(w, table))


@pytest.mark.parametrize("how", ["position", "gtid", "time"])
@pytest.mark.parametrize("table", ["items", "tally"])
def test_live_state_as_of_the_middle_equals_the_files_there(live: tuple[StreamServer, StateWorkload], how: str,
                                                            table: str) -> None:
    server, w = live
    m = w.middle
    assert m is not None
    as_of = {"position": f"{m.file}:{m.pos}", "gtid": m.gtid, "time": as_utc(m.clock)}[how]
    ours = read_live(server, table, asOf=as_of, statePartitions=2)
    assert_same_rows(_rows(ours), m.tables[table], f"live {table} asOf {as_of}")
    _same_state(ours, read_files(w, table, asOf=as_of, statePartitions=2))


def test_the_tasks_read_with_the_drivers_plan(live: tuple[StreamServer, StateWorkload]) -> None:
    """A task replays up to the end the driver planned, with the history the split carries, whatever its own format
    would plan now; no password in the plan."""
    server, w = live
    assert w.final is not None
    opts = _options(server, "items", statePartitions=2)
    driver = make_format("mysql-replication", server.uri, opts)
    splits = driver.plan(driver.list_files())
    assert len(splits) == 2 and CDC_PASSWORD not in repr(splits)
    server.execute(f"UPDATE {DB}.items SET qty = qty + 1 WHERE id = 1")  # after the planned end: not in the state
    try:
        task = pickle.loads(pickle.dumps(make_format("mysql-replication", server.uri, opts)))
        batches = [b for s in pickle.loads(pickle.dumps(splits)) for b in task.read_split(s)]
        assert task.table_view().cutoff > driver.table_view().cutoff  # planned now, the end is past the update
        rows = _rows(pa.Table.from_batches(batches, schema=driver.schema()))
        assert_same_rows(rows, w.final.tables["items"], "the tasks' rows")
    finally:
        server.execute(f"UPDATE {DB}.items SET qty = qty - 1 WHERE id = 1")  # the final SELECT holds again


def test_a_spark_read_equals_the_arrow_api(spark: Any, live: tuple[StreamServer, StateWorkload]) -> None:
    server, _w = live
    reader = spark.read.format("mysql-replication")
    for k, v in _options(server, "items", statePartitions=2).items():
        reader = reader.option(k, v)
    df = reader.load()
    assert df.rdd.getNumPartitions() == 2
    spark_rows = [r.asDict() for r in df.selectExpr(
        "*", "date_format(stamp, 'yyyy-MM-dd HH:mm:ss.SSS') AS stamp_text", "to_json(doc) AS doc_text")
        .drop("stamp", "doc").collect()]
    arrow = read_live(server, "items")
    assert df.columns == arrow.column_names
    ours = []
    for row in arrow.to_pylist():
        stamp, doc = row.pop("stamp"), row.pop("doc")
        row["stamp_text"] = None if stamp is None else stamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        row["doc_text"] = None if doc is None else decode_variant(doc["value"], doc["metadata"])
        ours.append(row)
    for row in spark_rows:
        row["doc_text"] = None if row["doc_text"] is None else json.loads(row["doc_text"], parse_float=Decimal)

    def key(row: dict[str, Any]) -> tuple[str, int]:
        return row["region"], row["id"]

    assert sorted(spark_rows, key=key) == sorted(ours, key=key) and len(ours) > 30


def test_view_state_is_a_batch_read(live: tuple[StreamServer, StateWorkload]) -> None:
    server, _w = live
    with pytest.raises(OptionError, match="view=state is a batch read"):
        make_format("mysql-replication", server.uri, _options(server, "items")).stream()
    for name, value in (("startingPosition", "earliest"), ("endingPosition", "latest"),
                        ("startingPosition", "snapshot")):
        with pytest.raises(OptionError, match="does not apply to view=state") as caught:
            read_live(server, "items", **{name: value})
        assert caught.value.option == name
    with pytest.raises(OptionError, match="takes the table's layouts from the DDL"):
        read_live(server, "items", schemaFrom="binlog")


def test_bad_points_are_option_errors_without_the_password(live: tuple[StreamServer, StateWorkload]) -> None:
    server, w = live
    assert w.final is not None
    past = f"{w.final.file}:{w.final.pos + 100000}"
    for as_of, match in (("mysql-bin.999999:4", "no binlog 'mysql-bin.999999' among the files read"),
                         (past, "past the end of the binlogs read"),
                         ("3f1c0e5e-0000-11ef-9c2a-0242ac120002:1-5", "no transaction of the binlogs read has a GTID"),
                         ("2001-01-01 00:00:00", "no known layout as of asOf=2001-01-01 00:00:00")):
        with pytest.raises(OptionError, match=match) as caught:
            read_live(server, "items", asOf=as_of)
        assert CDC_PASSWORD not in str(caught.value) and CDC_PASSWORD not in repr(caught.value)


def test_purged_creation_is_refused_as_the_file_source_refuses_it(live: tuple[StreamServer, StateWorkload]) -> None:
    """Last in the module: it purges the server's binlogs."""
    server, _w = live
    server.execute(f"CREATE TABLE {DB}.early (id INT PRIMARY KEY, v INT)")
    server.execute(f"INSERT INTO {DB}.early VALUES (1, 1), (2, 2)")
    server.flush_logs()
    server.execute(f"UPDATE {DB}.early SET v = 3 WHERE id = 2")  # rows of the table in the binlog that is left
    created_in = server.binlog_files()[-2].name
    server.purge_all_but_newest(older_than=created_in)
    left = [str(p) for p in server.binlog_files()]
    for table in ("early", "items"):
        want = f"no CREATE TABLE {DB}.{table} was found in the binlogs read"
        with pytest.raises(OptionError, match=want) as from_files:
            spark_logsource.read("mysql-binlog", left, view="state", table=f"{DB}.{table}")
        with pytest.raises(OptionError, match=want) as from_server:
            read_live(server, table)
        assert "purged" in str(from_server.value)
        for error in (from_files.value, from_server.value):
            assert CDC_PASSWORD not in str(error) and CDC_PASSWORD not in repr(error)
