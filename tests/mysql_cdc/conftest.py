"""The typed CDC streams' MariaDB 10.11: the session's streaming server (:mod:`tests.support.servers.mariadb_stream`,
the streaming tests' settings) lent to each module with the database ``cdc`` made anew (they ALTER, RENAME and
TRUNCATE their table in it), and the stream driven the way Spark's micro-batches drive it. The table, its writer and
the rebuild of it from change rows are :mod:`tests.support.mysql_cdc`'s."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import SchemaChangeError
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from tests.support.servers.mariadb_stream import StreamServer


@pytest.fixture(scope="module")
def cdc_server(stream_mariadb: StreamServer) -> StreamServer:
    stream_mariadb.checkout({"cdc": True})
    return stream_mariadb


def drive(stream: LogStream, start: Offset, budget: ReadBudget | None = None
          ) -> tuple[list[dict[str, Any]], Offset, SchemaChangeError | None]:
    """Read ``stream`` from ``start`` range by range (as Spark's micro-batches do) until nothing new is complete or
    a schema change stops it: the rows, the last offset committed, the error."""
    rows: list[dict[str, Any]] = []
    cur = start
    while True:
        try:
            end = stream.latest_offset(cur, budget or ReadBudget(max_bytes=3000))
        except SchemaChangeError as exc:
            return rows, cur, exc
        if offset_json(end) == offset_json(cur):
            return rows, cur, None
        for slice_ in stream.plan(cur, end):
            for batch in stream.read_slice(slice_):
                assert batch.schema == stream.schema()
                rows.extend(pa.Table.from_batches([batch]).to_pylist())
        cur = end
