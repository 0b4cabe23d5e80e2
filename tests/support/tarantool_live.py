"""Support code of the live replication tests: reading ranges from the server and from its own files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import spark_logsource
from spark_logsource.registry import format_class
from spark_logsource.tarantool.stream.live import LiveStream, make_offset
from tests.support.servers.tarantool_live import LiveTarantool

#: Columns that differ by design between the live rows and the directory reader's rows.
TRANSPORT_COLUMNS = ("file", "offset", "file_type")

#: A workload touching every kind of row the server writes: DML of every type, update/upsert ops, transactions,
#: synchronous transactions (CONFIRM rows) and DDL.
MIXED_WORKLOAD = """
local t = box.space.t
local decimal = require('decimal')
local uuid = require('uuid')
box.cfg{replication_synchro_quorum = 1}
for i = 1, 50 do t:insert{i, 'row ' .. i} end
t:replace{7, {nested = {1, 2, {k = 'v'}}, n = -3}}
t:update(8, {{'=', 2, 'updated'}})
t:upsert({9, 'x'}, {{'=', 2, 'upserted'}})
t:upsert({1000, 'new'}, {{'=', 2, 'unused'}})
t:delete(10)
t:replace{11, decimal.new('-12.3450'), uuid.fromstr('0b5a1d34-2f6c-4b2e-9d3b-6a7c1e2f3a4b'), true, 1.5}
box.begin() for i = 100, 130 do t:insert{i, string.rep('z', i)} end box.commit()
box.begin() t:insert{200, 'a'} t:update(200, {{'=', 2, 'b'}}) t:delete(200) box.commit()
box.space.sy:insert{1, 'sync'}
box.begin() box.space.sy:insert{2, 'sync tx'} box.space.sy:insert{3, 'sync tx'} box.commit()
local s2 = box.schema.space.create('ddl_' .. tostring(math.random(1000000)))
s2:create_index('pk')
s2:insert{1}
s2:drop()
"""


def make_stream(server: LiveTarantool, **options: Any) -> LiveStream:
    fmt = format_class("tarantool-replication")(server.options(**options))
    return fmt.stream()


def read_range(server: LiveTarantool, start: dict[int, int], end: dict[int, int], **options: Any) -> pa.Table:
    """Every row of the vclock range (start, end] read live, through plan and read_slice."""
    stream = make_stream(server, **options)
    replicaset = server.value("box.info.cluster.uuid")
    slices = stream.plan(make_offset(replicaset, start), make_offset(replicaset, end))
    batches = [b for s in slices for b in stream.read_slice(s)]
    return pa.Table.from_batches(batches, schema=stream.schema())


def directory_rows(directory: Path, start: dict[int, int], end: dict[int, int], tuple_format: str) -> list[dict]:
    """The rows of the server's own .xlog files whose transaction id per origin is in (start, end]."""
    table = spark_logsource.read("tarantool-xlog", [str(p) for p in sorted(directory.glob("*.xlog"))],
                                 tupleFormat=tuple_format, mode="FAILFAST")
    out = []
    for row in table.to_pylist():
        r = row["replica_id"]
        if r in end and start.get(r, 0) < row["tsn"] <= end[r]:
            out.append(row)
    return out


def strip(rows: list[dict], drop: tuple[str, ...] = TRANSPORT_COLUMNS) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in drop} for row in rows]
