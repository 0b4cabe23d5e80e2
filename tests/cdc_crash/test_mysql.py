"""``mysql-replication`` ``view=table`` into a Delta table (``flat_view`` + ``merge_into_delta``, docs/cdc.md) in a
job of its own, checked the way a user would: a writer keeps committing multi-row, multi-statement transactions
(and one ``ALTER TABLE … ADD COLUMN``) on a real MariaDB while the job is SIGKILLed mid-stream and restarted on its
checkpoint (and restarted again after the schema change stopped it); at the end the Delta table equals the
server's ``SELECT *``, value for value."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.cdc_crash.support import STOPPED, Job
from tests.mysql_stream.conftest import CDC_PASSWORD, StreamServer
from tests.support.mysql_cdc import COLUMNS, TableWriterThread, assert_same_table, create_table, delta_rows, server_rows

pytestmark = [pytest.mark.spark, pytest.mark.server]

TABLE = "crash.orders"


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
    server.execute(f"CREATE TABLE {TABLE} ({COLUMNS})")  # in the new binlog, with no DROP before it
    options = {"uri": server.uri, "serverId": "4900", "view": "table", "table": TABLE, "mode": "FAILFAST",
               "startingPosition": json.dumps({"file": first, "pos": 4}), "maxBytesPerTrigger": "16k"}
    job = Job(tmp_path, {"kind": "mysql", "format": "mysql-replication", "options": options,
                         "target": str(tmp_path / "delta"), "keys": ["id"]}, password=CDC_PASSWORD)
    writer = TableWriterThread(server, seed=5, table=TABLE)
    writer.start()
    try:
        writer.wait_more(20)
        job.start()
        job.wait_batches(lambda b: {0, 1} <= set(b), "two merged batches")  # batch 1 runs after 0 is committed
        killed_at = max(job.batches())
        job.kill()  # 1: mid-stream, the writer going on
        writer.wait_more(20)

        job.start()
        job.wait_batches(_merged_beyond(job, killed_at), "a batch after the restart")
        writer.add_column()  # the running query's schema cannot name the new column
        code = job.wait_exit()
        assert code == STOPPED, job.log_tail()
        assert "schema change" in job.error() and "ADD COLUMN extra" in job.error(), job.error()
        assert CDC_PASSWORD not in job.error() and CDC_PASSWORD not in job.log_tail()
        stopped_at = max(job.batches())
        writer.wait_more(10)

        job.start()  # the retry: the schema now has the column
        job.wait_batches(_merged_beyond(job, stopped_at, column="extra"), "a batch with the new column")
        killed_again_at = max(job.batches())
        job.kill()  # 2: mid-stream, after the schema change
        writer.wait_more(20)
    finally:
        writer.stop()
        job.close()

    job.start("availableNow", {"maxBytesPerTrigger": "1m"})  # catch up with everything written, in larger batches
    assert job.wait_exit() == 0, job.log_tail()
    batches = job.batches()
    assert max(batches) > killed_again_at and writer.transactions > 80
    assert sorted(batches) == list(range(len(batches))), "batch ids without a gap"

    want = server_rows(server, TABLE)
    assert len(want) > 100 and any(r["extra"] for r in want.values()) and any(k > 1000000 for k in want)
    assert_same_table(delta_rows(job.target), want, exact=True)


def test_killed_mid_snapshot_and_restarted_while_writing(crash_mariadb: StreamServer, tmp_path: Path) -> None:
    """``startingPosition=snapshot``: the table in many chunks, one per micro-batch, the job killed after the first
    snapshot batch committed and again in the changes after the snapshot."""
    server, table = crash_mariadb, "crash.snap"
    create_table(server, table)
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
    writer = TableWriterThread(server, seed=9, table=table, first_id=4001, move_keys=False)
    writer.start()
    try:
        writer.wait_more(10)
        job.start()
        job.wait_batches(lambda b: {0, 1} <= set(b) and b[0]["ops"] == ["r"], "the first snapshot batch committed")
        first_kill = max(job.batches())
        job.kill()  # 1: mid-snapshot
        writer.wait_more(20)

        job.start()
        job.wait_batches(lambda b: any(k > first_kill and set(v["ops"]) - {"r"} for k, v in b.items()),
                         "a batch of changes after the snapshot")
        job.kill()  # 2: in the changes after the snapshot
        writer.wait_more(20)
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
    want = server_rows(server, table)
    assert len(want) > 4000 and any(k > 4000 for k in want)
    assert_same_table(delta_rows(job.target), want, exact=True)
