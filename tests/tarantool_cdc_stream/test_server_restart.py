"""The live ``view=space`` stream rides through a Tarantool restart: micro-batches planned while the server is down
retry (``reconnectTimeout``) and go on once it is back, every change arrives once, and the copy kept with the sink
function equals ``box.space.X:select()``."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.registry import format_class
from tests.support.servers.standin import PortStandIn
from tests.support.servers.tarantool_live import LiveTarantool
from tests.tarantool_cdc_stream.support import DictTarget, create_space, drain, server_rows, transactions

pytestmark = pytest.mark.server

NAMES = ["id", "name", "n"]


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    """A server of this module's own: the test stops and starts it (same directory, same port)."""
    server = LiveTarantool(tmp_path_factory.mktemp("typed_restart"))
    server.start()
    yield server
    server.stop()


def test_a_typed_live_stream_rides_through_a_server_restart(restartable: LiveTarantool) -> None:
    rng = random.Random(12)
    create_space(restartable, "rs")
    stream = format_class("tarantool-replication")(restartable.options(
        mode="FAILFAST", view="space", space="rs", startingPosition="latest", maxRowsPerTrigger=11,
        reconnectTimeout=120)).stream()
    target = DictTarget(str(restartable.directory), "rs")
    seen: list[pa.Table] = []

    def sink(batch: pa.Table) -> None:
        seen.append(batch)
        target.apply(batch)

    offset = drain(stream, stream.initial_offset(), stream.default_budget(), sink)
    transactions(restartable, "rs", rng, 30, 0)
    offset = drain(stream, offset, stream.default_budget(), sink)
    before = sum(t.num_rows for t in seen)
    assert before > 30

    restartable.stop()
    outcome: dict[str, Any] = {}

    def planned_while_down() -> None:
        try:
            outcome["offset"] = drain(stream, offset, stream.default_budget(), sink)
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    poller = threading.Thread(target=planned_while_down, daemon=True)
    with PortStandIn(restartable.port) as stand_in:
        poller.start()
        assert stand_in.wait_for(2), "the stream never tried to reconnect"
    restartable.start()
    poller.join(timeout=180)
    assert not poller.is_alive(), "the stream did not go on after the server came back"
    assert "error" not in outcome, outcome.get("error")
    transactions(restartable, "rs", rng, 30, 40)
    drain(stream, outcome["offset"], stream.default_budget(), sink)

    rows = pa.concat_tables(seen)
    lsns = rows.column("lsn").to_pylist()
    assert rows.num_rows > before
    assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns), "every change once, in log order"
    assert target.plain(NAMES) == server_rows(restartable, "rs", NAMES)
