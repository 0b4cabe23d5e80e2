"""``mysql-replication`` ``view=table`` into a Delta table (``flat_view`` + ``merge_into_delta``, docs/cdc.md) in a
job of its own, checked the way a user would: a writer keeps committing multi-row, multi-statement transactions
(and one ``ALTER TABLE … ADD COLUMN``) on a real MariaDB while the job is SIGKILLed mid-stream and restarted on its
checkpoint (and restarted again after the schema change stopped it); at the end the Delta table equals the
server's ``SELECT *``, value for value."""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.cdc_crash.support import STOPPED, Job
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.waiting import until

pytestmark = [pytest.mark.spark, pytest.mark.server]

log = logging.getLogger(__name__)

TABLE = "crash.orders"
CREATE = ("CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), at DATETIME(3), "
          "flag TINYINT, big BIGINT UNSIGNED)")


class Writer:
    """A thread committing transactions of 1 to 5 inserts, updates of the newest rows and a delete, until stopped;
    :meth:`add_column` makes it run the ALTER between two transactions and fill the new column afterwards."""

    def __init__(self, server: StreamServer, seed: int, table: str = TABLE, first_id: int = 1,
                 move_keys: bool = True) -> None:
        self.server = server
        self.move_keys = move_keys
        self.table = table
        self.random = random.Random(seed)
        self.transactions = 0
        self.next_id = first_id
        self.altered = False
        self.error: BaseException | None = None
        self._alter = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="crash-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert self.error is None, f"the writer failed: {self.error}"

    def wait_for(self, more: int) -> None:
        """Until ``more`` transactions more are committed (an amount, not a time)."""
        target = self.transactions + more
        assert until(lambda: self.transactions >= target or self.error is not None), "the writer went on"
        assert self.error is None, f"the writer failed: {self.error}"

    def add_column(self) -> None:
        self._alter.set()
        assert until(lambda: self.altered or self.error is not None), "the writer ran the ALTER"
        assert self.error is None, f"the writer failed: {self.error}"

    def _transaction(self, cur: Any) -> None:
        r = self.random
        cur.execute("BEGIN")
        rows = []
        for _ in range(r.randint(1, 5)):
            rows.append((self.next_id, f"n{self.next_id}", Decimal(r.randint(0, 99999)) / 100,
                         r.choice([None, 0, 1, -5]), r.randint(0, 2**64 - 1)))
            self.next_id += 1
        if self.altered:
            cur.executemany(f"INSERT INTO {self.table} (id, name, amount, at, flag, big, extra) "
                            "VALUES (%s, %s, %s, NOW(3), %s, %s, CONCAT('x', %s))", [(*v, v[0]) for v in rows])
        else:
            cur.executemany(f"INSERT INTO {self.table} (id, name, amount, at, flag, big) "
                            "VALUES (%s, %s, %s, NOW(3), %s, %s)", rows)
        if r.random() < 0.6:
            cur.execute(f"UPDATE {self.table} SET amount = amount + 1, name = CONCAT(LEFT(name, 30), 'u') "
                        "ORDER BY id DESC LIMIT 2")
        if self.altered and r.random() < 0.5:
            cur.execute(f"UPDATE {self.table} SET extra = CONCAT(LEFT(COALESCE(extra, ''), 50), 'e') "
                        "ORDER BY id LIMIT 3")
        if r.random() < 0.3:
            cur.execute(f"DELETE FROM {self.table} ORDER BY id LIMIT 1")
        if self.move_keys and r.random() < 0.1:  # a primary key change: a delete of the old key in the flat view
            cur.execute(f"UPDATE {self.table} SET id = id + 1000000 ORDER BY id LIMIT 1")
        cur.execute("COMMIT")
        self.transactions += 1

    def _run(self) -> None:
        import pymysql

        try:
            conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
            try:
                with conn.cursor() as cur:
                    while not self._stop.is_set():
                        if self._alter.is_set() and not self.altered:
                            cur.execute(f"ALTER TABLE {self.table} ADD COLUMN extra VARCHAR(60) AFTER name")
                            self.altered = True
                        self._transaction(cur)
                        self._stop.wait(0.1)
            finally:
                conn.close()
        except BaseException as exc:  # reported by stop() / wait_for()
            log.exception("the writer failed")
            self.error = exc


def _server_rows(server: StreamServer, table: str = TABLE) -> dict[Any, dict[str, Any]]:
    import pymysql.cursors

    conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            return {r["id"]: r for r in cur.fetchall()}
    finally:
        conn.close()


def _plain(value: Any) -> Any:
    """A Delta cell as pymysql gives the server's: DATETIME without a zone (the target may keep it as UTC)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _delta_rows(path: Path) -> dict[Any, dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    out = {r["id"]: {k: _plain(v) for k, v in r.items() if k != "seq"} for r in rows}
    assert len(out) == len(rows), "one row per key in the target"
    return out


def _merged_beyond(job: Job, batch: int, **want: Any) -> Any:
    """A check: a batch after ``batch`` with rows (and ``want``'s column in it) was merged."""
    column = want.get("column")
    return lambda batches: any(b > batch and info["rows"] and (column is None or column in info["columns"])
                               for b, info in batches.items())


def test_killed_mid_stream_and_restarted_while_writing_and_altering(crash_mariadb: StreamServer,
                                                                    tmp_path: Path) -> None:
    server = crash_mariadb
    server.execute(f"DROP TABLE IF EXISTS {TABLE}")
    server.flush_logs()
    first = server.binlog_files()[-1].name
    server.execute(CREATE.format(table=TABLE))
    options = {"uri": server.uri, "serverId": "4900", "view": "table", "table": TABLE, "mode": "FAILFAST",
               "startingPosition": json.dumps({"file": first, "pos": 4}), "maxBytesPerTrigger": "16k"}
    job = Job(tmp_path, {"kind": "mysql", "format": "mysql-replication", "options": options,
                         "target": str(tmp_path / "delta"), "keys": ["id"]}, password=CDC_PASSWORD)
    writer = Writer(server, seed=5)
    writer.start()
    try:
        writer.wait_for(20)
        job.start()
        job.wait_batches(lambda b: {0, 1} <= set(b), "two merged batches")  # batch 1 runs after 0 is committed
        killed_at = max(job.batches())
        job.kill()  # 1: mid-stream, the writer going on
        writer.wait_for(20)

        job.start()
        job.wait_batches(_merged_beyond(job, killed_at), "a batch after the restart")
        writer.add_column()  # the running query's schema cannot name the new column
        code = job.wait_exit()
        assert code == STOPPED, job.log_tail()
        assert "schema change" in job.error() and "ADD COLUMN extra" in job.error(), job.error()
        assert CDC_PASSWORD not in job.error() and CDC_PASSWORD not in job.log_tail()
        stopped_at = max(job.batches())
        writer.wait_for(10)

        job.start()  # the retry: the schema now has the column
        job.wait_batches(_merged_beyond(job, stopped_at, column="extra"), "a batch with the new column")
        killed_again_at = max(job.batches())
        job.kill()  # 2: mid-stream, after the schema change
        writer.wait_for(20)
    finally:
        writer.stop()
        job.close()

    job.start("availableNow", {"maxBytesPerTrigger": "1m"})  # catch up with everything written, in larger batches
    assert job.wait_exit() == 0, job.log_tail()
    batches = job.batches()
    assert max(batches) > killed_again_at and writer.transactions > 80
    assert sorted(batches) == list(range(len(batches))), "batch ids without a gap"

    got, want = _delta_rows(job.target), _server_rows(server)
    assert len(want) > 100 and any(r["extra"] for r in want.values()) and any(k > 1000000 for k in want)
    assert got.keys() == want.keys()
    for key, row in want.items():
        assert got[key] == row, key


def test_killed_mid_snapshot_and_restarted_while_writing(crash_mariadb: StreamServer, tmp_path: Path) -> None:
    """``startingPosition=snapshot``: the table in many chunks, one per micro-batch, the job killed after the first
    snapshot batch committed and again in the changes after the snapshot."""
    server, table = crash_mariadb, "crash.snap"
    server.execute(f"DROP TABLE IF EXISTS {table}")
    server.execute(CREATE.format(table=table))
    rng = random.Random(3)
    with server._conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} (id, name, amount, at, flag, big) VALUES (%s, %s, %s, NOW(3), %s, %s)",
                        [(i, f"s{i}", Decimal(rng.randint(0, 99999)) / 100, rng.choice([None, 1]),
                          rng.randint(0, 2**64 - 1)) for i in range(1, 4001)])
    options = {"uri": server.uri, "serverId": "5100", "view": "table", "table": table, "mode": "FAILFAST",
               "startingPosition": "snapshot", "snapshotChunks": "12", "maxChunksPerTrigger": "1",
               "maxBytesPerTrigger": "16k"}
    job = Job(tmp_path, {"kind": "mysql", "format": "mysql-replication", "options": options,
                         "target": str(tmp_path / "delta"), "keys": ["id"]}, password=CDC_PASSWORD)
    # (no key moved far away: the chunks split the key range evenly, so every chunk holds rows)
    writer = Writer(server, seed=9, table=table, first_id=4001, move_keys=False)
    writer.start()
    try:
        writer.wait_for(10)
        job.start()
        job.wait_batches(lambda b: {0, 1} <= set(b) and b[0]["ops"] == ["r"], "the first snapshot batch committed")
        first_kill = max(job.batches())
        job.kill()  # 1: mid-snapshot
        writer.wait_for(20)

        job.start()
        job.wait_batches(lambda b: any(k > first_kill and set(v["ops"]) - {"r"} for k, v in b.items()),
                         "a batch of changes after the snapshot")
        job.kill()  # 2: in the changes after the snapshot
        writer.wait_for(20)
    finally:
        writer.stop()
        job.close()

    job.start("availableNow", {"maxBytesPerTrigger": "1m"})
    assert job.wait_exit() == 0, job.log_tail()
    attempts = job.attempts()
    pids = list(dict.fromkeys(a["pid"] for a in attempts))
    # the snapshot was still being read when the first job was killed: a later job read more of its chunks
    assert any(a["ops"] and a["ops"] == ["r"] for a in attempts if a["pid"] != pids[0])
    snapshot_batches = [b for b, info in job.batches().items() if info["ops"] == ["r"]]
    assert len(snapshot_batches) >= 6, "the chunks came in several micro-batches"
    got, want = _delta_rows(job.target), _server_rows(server, table)
    assert len(want) > 4000 and any(k > 4000 for k in want)
    assert got.keys() == want.keys()
    for key, row in want.items():
        assert got[key] == row, key
