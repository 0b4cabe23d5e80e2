"""``startingPosition=snapshot`` on ``mysql-replication`` with ``view=table`` against the session's MariaDB 10.11: the
snapshot in whole chunks over several micro-batches while a writer keeps changing the table, a query killed
mid-snapshot and restarted on its checkpoint, then the typed changes from the snapshot's position T.

Oracles: the server (its keys and plain columns now), and ``view=table`` over the server's binlog files (the table
replayed from its CREATE, and the changes from T on, one for one with the stream's)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import LogSourceError, OptionError
from spark_logsource.mysql.position import binlog_number
from tests.mysql_snapshot import conftest
from tests.mysql_snapshot.conftest import (
    INITIAL_ROWS,
    PASSWORD,
    TYPED_COLUMNS,
    TYPED_DDL,
    TYPED_TABLE,
    USER,
    TypedWriter,
    insert_sql,
    typed_values,
)
from tests.support.streaming import run_available_now
from tests.support.waiting import QUERY_TIMEOUT, expect

log = logging.getLogger(__name__)

#: Columns whose values pymysql and the view give alike (int, str, Decimal, bytes): compared with SELECT.
PLAIN = ("id", "ti", "si", "ii", "bi", "bu", "dc", "vc", "tx", "en", "st", "vb", "bl")


def _fresh_table(server: Any, rows: int = INITIAL_ROWS) -> tuple[str, set[int]]:
    """The typed table made anew in a new binlog (the first file of the oracle), with ``rows`` rows."""
    server.flush_logs()
    first = server.binlog_files()[-1].name
    server.execute(f"DROP TABLE IF EXISTS {TYPED_TABLE}")
    server.execute(TYPED_DDL)
    r = random.Random(8)
    keys = set(random.Random(3).sample(range(1, 6001), rows))
    with server._conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.executemany(insert_sql(TYPED_TABLE, TYPED_COLUMNS), [typed_values(r, k) for k in sorted(keys)])
    return first, keys


def _files_from(server: Any, first: str) -> list[Path]:
    return [p for p in server.binlog_files() if binlog_number(p.name) >= binlog_number(first)]


def _rebuild(rows: Iterable[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The table from change rows, in ``seq`` order: the snapshot's ``r`` rows, then inserts, updates, deletes."""
    state: dict[Any, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        op = row["op"]
        assert op in ("r", "c", "u", "d", "t"), row
        if op == "t":
            state.clear()
            continue
        if op in ("u", "d"):
            assert row["before"]["id"] in state, row
            del state[row["before"]["id"]]
        if op in ("r", "c", "u"):
            assert op == "u" or row["after"]["id"] not in state, row  # no row given twice
            state[row["after"]["id"]] = row["after"]
    return state


def _server_rows(server: Any) -> dict[Any, tuple[Any, ...]]:
    return {row[0]: row for row in server.query(f"SELECT {', '.join(PLAIN)} FROM {TYPED_TABLE}")}


def _check(server: Any, rows: list[dict[str, Any]], oracle: list[dict[str, Any]]) -> tuple[int, int]:
    """The streamed rows against the server and the binlog oracle; (snapshot rows, changes after T)."""
    snapshot = [r for r in rows if r["op"] == "r"]
    assert snapshot, "no snapshot rows"
    t_file, t_pos = snapshot[0]["source"]["file"], snapshot[0]["source"]["pos"]
    assert all((r["source"]["file"], r["source"]["pos"]) == (t_file, t_pos) for r in snapshot)
    ids = [r["after"]["id"] for r in snapshot]
    assert len(ids) == len(set(ids)), "a key in two snapshot rows"
    t = (binlog_number(t_file)[1], t_pos)

    def after_t(row: dict[str, Any]) -> bool:
        return (binlog_number(Path(row["source"]["file"]).name)[1], row["source"]["pos"]) >= t

    # the changes after T: exactly the binlog's, none twice, none missing, none before T
    changes = sorted(((r["seq"], r["op"], r["before"], r["after"]) for r in rows if r["op"] != "r"),
                     key=lambda c: c[0])
    expected = sorted(((r["seq"], r["op"], r["before"], r["after"]) for r in oracle if after_t(r)),
                      key=lambda c: c[0])
    assert len(changes) == len(expected) and changes == expected
    assert all(after_t(r) for r in rows if r["op"] != "r")
    # the snapshot is the table at T: the binlog replayed up to T
    at_t = _rebuild(r for r in oracle if not after_t(r))
    assert {r["after"]["id"]: r["after"] for r in snapshot} == at_t
    # the table now: the stream rebuilt equals the binlog replayed whole, and the server's keys and plain columns
    table = _rebuild(rows)
    assert table == _rebuild(oracle)
    server_rows = _server_rows(server)
    assert sorted(table) == sorted(server_rows)
    for key, values in server_rows.items():
        assert tuple(table[key][c] for c in PLAIN) == values, key
    return len(snapshot), len(changes)


def _plain(df: Any) -> Any:
    """The JSON column (a VARIANT) as its JSON text: Arrow cannot take a null VARIANT out of Spark."""
    from pyspark.sql import functions as F

    for name in ("before", "after"):
        df = df.withColumn(name, F.col(name).withField("js", F.to_json(F.col(f"{name}.js"))))
    return df


class PacedWriter(TypedWriter):
    """The typed table's writer, at most one transaction each few milliseconds (a stream test runs for minutes:
    the table and the binlog stay of a size a test reads in seconds)."""

    def run_once(self, cur: Any) -> None:
        super().run_once(cur)
        self._stop.wait(0.005)


@pytest.fixture()
def wide_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys of the writer's inserts from a space the table never fills (a long run inserts more than it deletes)."""
    monkeypatch.setattr(conftest, "KEY_SPACE", 10**6)


class Sink:
    """foreachBatch keyed by batch id (a re-run batch replaces its first attempt); raises once in ``fail_in``
    after keeping the attempt."""

    def __init__(self, fail_in: int | None = None) -> None:
        self.batches: dict[int, list[dict[str, Any]]] = {}
        self.attempts: dict[int, list[list[dict[str, Any]]]] = {}
        self.fail_in = fail_in

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = sorted(_plain(df).toArrow().to_pylist(), key=lambda r: r["seq"])
        self.batches[batch_id] = rows
        self.attempts.setdefault(batch_id, []).append(rows)
        if batch_id == self.fail_in:
            self.fail_in = None
            raise RuntimeError(f"the sink fails in batch {batch_id} on purpose")

    def rows(self) -> list[dict[str, Any]]:
        return [r for b in sorted(self.batches) for r in self.batches[b]]


def _logged_offsets(checkpoint: Path) -> dict[int, dict[str, Any]]:
    """Spark's offset log: batch id → the source's end offset."""
    out = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            out[int(path.name)] = json.loads(path.read_text().strip().splitlines()[-1])
    return out


def _commits(checkpoint: Path) -> set[int]:
    return {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}


@pytest.mark.spark
@pytest.mark.server
def test_spark_snapshot_then_changes_killed_mid_snapshot(spark: Any, snap_server: Any, tmp_path: Path,
                                                         wide_keys: None) -> None:
    first, keys = _fresh_table(snap_server)
    uri = f"mysql://{USER}@127.0.0.1:{snap_server.port}"
    checkpoint = tmp_path / "ckpt"

    def reader() -> Any:
        return (spark.readStream.format("mysql-replication").option("uri", uri).option("password", PASSWORD)
                .option("serverId", "4700").option("view", "table").option("table", TYPED_TABLE)
                .option("startingPosition", "snapshot").option("snapshotChunks", "8")
                .option("maxChunksPerTrigger", "2").load())

    def start(sink: Sink) -> Any:
        return (reader().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
                .trigger(processingTime="200 milliseconds").start())

    sink = Sink(fail_in=2)
    with PacedWriter(snap_server, keys, seed=17) as writer:
        writer.wait_for(20)
        query = start(sink)
        # batches 0 and 1 commit; batch 2 (chunks 4 and 5) is planned and logged, then its sink fails
        with pytest.raises(Exception, match="on purpose"):
            query.awaitTermination(QUERY_TIMEOUT)
        assert _commits(checkpoint) == {0, 1}
        logged = _logged_offsets(checkpoint)
        assert [logged[b]["kind"] for b in (0, 1, 2)] == ["mysql-snapshot"] * 3
        assert [logged[b]["done"] for b in (0, 1, 2)] == [2, 4, 6]
        assert "password" not in json.dumps(logged) and PASSWORD not in json.dumps(logged)
        first_run = {b: len(rows) for b, rows in sink.batches.items()}
        assert {r["op"] for b in (0, 1, 2) for r in sink.batches[b]} == {"r"}

        # restarted on the checkpoint while the writer goes on: batch 2 again, then chunks 6-7, then the changes
        query = start(sink)
        try:
            expect(lambda: any(r["op"] != "r" for r in sink.rows()), QUERY_TIMEOUT, "changes after the snapshot")
            writer.wait_for(writer.transactions + 40)
        finally:
            query.stop()
    run_available_now(reader(), checkpoint, sink, timeout=QUERY_TIMEOUT)  # the rest, up to the newest boundary

    # a re-run chunk gives the same rows (rolled back to T), whenever it runs
    assert len(sink.attempts[2]) == 2 and sink.attempts[2][0] == sink.attempts[2][1]
    assert {b: len(sink.batches[b]) for b in first_run} == first_run
    logged = _logged_offsets(checkpoint)
    assert logged[3]["kind"] == "mariadb" and logged[3]["file"] == logged[0]["at"]["file"] \
        and logged[3]["pos"] == logged[0]["at"]["pos"]  # the last chunks end at T, with the layout at T
    assert logged[3]["table"]["name"] == ["snap", "many"]
    assert {r["op"] for b in (0, 1, 2, 3) for r in sink.batches[b]} == {"r"}

    oracle_df = (spark.read.format("mysql-binlog").option("view", "table").option("table", TYPED_TABLE)
              .option("mode", "FAILFAST").load([str(p) for p in _files_from(snap_server, first)]))
    oracle = _plain(oracle_df).toArrow().to_pylist()
    snapshot_rows, changes = _check(snap_server, sink.rows(), oracle)
    log.info("Spark: %d snapshot rows, %d changes after T, %d batches", snapshot_rows, changes, len(sink.batches))
    assert snapshot_rows > INITIAL_ROWS // 2 and changes > 100


@pytest.mark.server
def test_follow_snapshot_resumed_from_its_offset(snap_server: Any, wide_keys: None) -> None:
    first, keys = _fresh_table(snap_server, 1200)
    uri = f"mysql://{USER}@127.0.0.1:{snap_server.port}"
    options = {"password": PASSWORD, "serverId": "4800", "view": "table", "table": TYPED_TABLE, "mode": "FAILFAST",
               "snapshotChunks": "5", "maxChunksPerTrigger": "1"}
    rows: list[dict[str, Any]] = []
    with PacedWriter(snap_server, keys, seed=23) as writer:
        writer.wait_for(10)
        ranges = 0
        resume = None
        pending: list[dict[str, Any]] = []
        run = spark_logsource.follow("mysql-replication", uri, startingPosition="snapshot", **options)
        for batch, offset in run:
            pending.extend(batch.to_pylist())
            if offset is not None:  # a range read whole: commit its rows with its offset
                rows.extend(pending)
                pending = []
                resume = offset
                ranges += 1
                writer.wait_for(writer.transactions + 5)
                if ranges == 2:
                    break  # the consumer stops mid-snapshot (2 of 5 chunks)
        run.close()
        assert resume is not None and resume["kind"] == "mysql-snapshot" and resume["done"] == 2
        assert PASSWORD not in json.dumps(resume)
        resumed = spark_logsource.follow("mysql-replication", uri, startingPosition=json.dumps(resume), **options)
        for batch, offset in resumed:
            pending.extend(batch.to_pylist())
            if offset is not None:
                rows.extend(pending)
                pending = []
                if offset["kind"] != "mysql-snapshot":
                    break  # the hand-over: the changes follow
        resumed.close()
        writer.wait_for(writer.transactions + 30)
    assert offset is not None and offset["kind"] == "mariadb"
    for batch, _offset in spark_logsource.follow("mysql-replication", uri, startingPosition=json.dumps(offset),
                                                 stop_when_idle=True, **options):
        rows.extend(batch.to_pylist())
    oracle = spark_logsource.read("mysql-binlog", [str(p) for p in _files_from(snap_server, first)], view="table",
                                  table=TYPED_TABLE, mode="FAILFAST").to_pylist()
    snapshot_rows, changes = _check(snap_server, rows, oracle)
    log.info("follow: %d snapshot rows, %d changes after T", snapshot_rows, changes)
    assert snapshot_rows > 600 and changes > 30


def test_snapshot_needs_view_table(snap_server: Any) -> None:
    uri = f"mysql://{USER}@127.0.0.1:{snap_server.port}"
    with pytest.raises(OptionError, match="startingPosition.*snapshot needs view=table"):
        spark_logsource.follow("mysql-replication", uri, password=PASSWORD, startingPosition="snapshot")
    with pytest.raises(OptionError, match="maxChunksPerTrigger.*snapshot with view=table only"):
        spark_logsource.follow("mysql-replication", uri, password=PASSWORD, maxChunksPerTrigger="2")
    with pytest.raises(OptionError, match="startingPosition.*not a batch read"):
        spark_logsource.read("mysql-replication", uri, password=PASSWORD, view="table", table=TYPED_TABLE,
                             startingPosition="snapshot")


def test_user_without_select_is_told(snap_server: Any) -> None:
    _fresh_table(snap_server, 50)
    uri = f"mysql://nosel@127.0.0.1:{snap_server.port}"
    with pytest.raises(LogSourceError) as caught:
        stream = spark_logsource.follow("mysql-replication", uri, password=f"{PASSWORD}-no", view="table",
                                        table=TYPED_TABLE, startingPosition="snapshot")
        next(stream)
    message = str(caught.value)
    # the view's own SHOW CREATE TABLE is refused first, before the snapshot's plan: the server's words
    assert "'nosel'" in message and "many" in message and "1142" in message and PASSWORD not in message


@pytest.mark.spark
@pytest.mark.server
def test_spark_gets_the_snapshots_errors(spark: Any, snap_server: Any, tmp_path: Path) -> None:
    _fresh_table(snap_server, 400)
    uri = f"mysql://{USER}@127.0.0.1:{snap_server.port}"

    def run(checkpoint: Path, sink: Any) -> str:
        df = (spark.readStream.format("mysql-replication").option("uri", uri).option("password", PASSWORD)
              .option("serverId", "4900").option("view", "table").option("table", TYPED_TABLE)
              .option("startingPosition", "snapshot").option("snapshotChunks", "3")
              .option("maxChunksPerTrigger", "1").load())
        query = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
                 .trigger(processingTime="200 milliseconds").start())
        try:
            with pytest.raises(Exception) as caught:
                query.awaitTermination(QUERY_TIMEOUT)
        finally:
            if query.isActive:
                query.stop()
        message = str(caught.value)
        assert PASSWORD not in message
        return message

    snap_server.set_global("binlog_row_image", "MINIMAL")
    try:
        message = run(tmp_path / "minimal", lambda df, batch_id: df.collect())
    finally:
        snap_server.set_global("binlog_row_image", "FULL")
    assert "binlog_row_image is MINIMAL" in message and "binlog_row_image=FULL" in message

    # a DDL statement on the table after T: the next chunk's window holds it, and the snapshot must start again
    def alter_after_first(df: Any, batch_id: int) -> None:
        df.collect()  # the sink reads the batch: the chunks are read only then
        if batch_id == 0:
            snap_server.execute(f"ALTER TABLE {TYPED_TABLE} ADD COLUMN extra INT")

    message = run(tmp_path / "ddl", alter_after_first)
    assert "ALTER TABLE" in message and "must start again" in message, message
