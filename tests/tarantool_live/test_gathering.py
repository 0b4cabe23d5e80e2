"""A backlog is decoded in whole batches (the rows the server surely sends are framed until a batch is full, not
decoded per network read), on the compiled framer and on its Python reference."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_logsource.tarantool.stream.live import make_offset
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.tarantool_live import make_stream
from tests.support.twins import Twin

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def calm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTarantool]:
    """A server of its own whose relay sends no heartbeat between rows even on a loaded machine (a heartbeat is
    a packet of another kind, which rightly ends a batch early)."""
    server = LiveTarantool(Path(tmp_path_factory.mktemp("gathering")) / "srv", replication_timeout=10.0)
    server.start()
    yield server
    server.stop(kill=True)


def test_a_backlog_comes_in_whole_batches_every_row_once(twin: Twin, calm_server: LiveTarantool) -> None:
    start = calm_server.vclock()
    calm_server.eval("for first = 1, 25000, 1000 do box.begin() for i = first, first + 999 do "
                     "box.space.t:replace{i, string.rep('g', 40)} end box.commit() end")
    end = calm_server.vclock()
    stream = make_stream(calm_server, batchSize=8192, readTimeout=30, tupleFormat="msgpack")
    replicaset = calm_server.value("box.info.cluster.uuid")
    (slice_,) = stream.plan(make_offset(replicaset, start), make_offset(replicaset, end))
    batches = list(stream.read_slice(slice_))
    # decoded 8192 rows at a time although the relay sends one row per write and each read gets a few
    assert [b.num_rows for b in batches] == [8192, 8192, 8192, 25000 - 3 * 8192]
    lsns = pa.Table.from_batches(batches).column("lsn").to_pylist()
    assert lsns == list(range(start[1] + 1, end[1] + 1))

