"""A running ``spark.readStream`` of ``tarantool-replication`` rides through a Tarantool restart
(``reconnectTimeout``): the query stays active and every row arrives exactly once; with a tiny timeout it fails
naming the server. Also: ``view=space`` says where that view is available."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import OptionError, UnavailableError
from tests.support.servers.standin import PortStandIn
from tests.support.servers.tarantool_live import PASSWORD, USER, LiveTarantool, free_port
from tests.support.tarantool_live import directory_rows
from tests.support.waiting import expect

pytestmark = [pytest.mark.server]

KEYS = ("lsn", "replica_id", "tsn", "is_commit", "type", "space_id", "tuple")


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    """A server of this module's own: the test stops and starts it (same directory, same port)."""
    server = LiveTarantool(tmp_path_factory.mktemp("restart"))
    server.start()
    yield server
    server.stop()


def _write(server: LiveTarantool, base: int, transactions: int) -> None:
    server.eval(f"for t = 0, {transactions - 1} do box.begin() for i = 1, 3 do "
                f"box.space.t:replace{{{base} + t * 3 + i, 'restart'}} end box.commit() end")


@pytest.mark.spark
def test_a_running_query_rides_through_a_server_restart(spark: Any, restartable: LiveTarantool,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "sink"
    out.mkdir()
    start = restartable.vclock()

    def sink(batch_df: Any, batch_id: int) -> None:
        rows = [[r[k] for k in KEYS] for r in batch_df.select(*KEYS).collect()]
        part = out / f"batch_{batch_id:05d}.part"
        part.write_text(json.dumps(rows))
        part.rename(out / f"batch_{batch_id:05d}.json")  # whole or absent while the test polls; idempotent per id

    def sunk() -> list[tuple]:
        return [tuple(r) for f in sorted(out.glob("batch_*.json")) for r in json.loads(f.read_text())]

    options = {k: str(v) for k, v in restartable.options(tupleFormat="json", maxRowsPerTrigger=50,
                                                         startingPosition=json.dumps({"1": start[1]})).items()}
    df = spark.readStream.format("tarantool-replication").options(**options).load()
    query = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        _write(restartable, 10_000, 40)
        expect(lambda: len(sunk()) >= 120, 120, "rows before the restart")
        restartable.stop()
        with PortStandIn(restartable.port) as stand_in:
            assert stand_in.wait_for(2), "the query never tried to reconnect"
        assert query.isActive, query.exception()
        restartable.start()
        _write(restartable, 20_000, 40)
        end = restartable.vclock()
        want = [tuple(r[k] for k in KEYS) for r in directory_rows(restartable.directory, start, end, "json")]
        expect(lambda: len(sunk()) >= len(want) or not query.isActive, 180, "the query to catch up")
        assert query.isActive, query.exception()
    finally:
        query.stop()
    assert len(want) == 240
    assert sunk() == want, "every row exactly once, in log order"


def test_a_tiny_timeout_fails_naming_the_server(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()  # nothing listens there
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="spark_logsource"), pytest.raises(UnavailableError) as info:
        list(spark_logsource.follow("tarantool-replication", f"tarantool://{USER}@127.0.0.1:{port}",
                                    password=PASSWORD, reconnectTimeout=1.5, stop_when_idle=True))
    took = time.monotonic() - began
    text = str(info.value)
    assert f"tarantool://127.0.0.1:{port}" in text and "reconnectTimeout=1.5" in text and "tries" in text
    assert 1.5 <= took < 10
    tries = [r for r in caplog.records if r.levelno == logging.WARNING and f"127.0.0.1:{port}" in r.getMessage()]
    assert len(tries) >= 2 and all(PASSWORD not in r.getMessage() for r in tries)


def test_view_space_names_where_it_is_available(live_server: LiveTarantool) -> None:
    with pytest.raises(OptionError, match=r"view=state is available on tarantool-xlog only") as info:
        spark_logsource.follow("tarantool-replication", live_server.uri, password=PASSWORD, view="state")
    assert "did you mean" not in str(info.value)
