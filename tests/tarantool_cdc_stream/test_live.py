"""``view=space`` on the live source (``tarantool-replication``) against a real Tarantool 2.6: every change once,
applied with the sink function into a copy equal to ``box.space.X:select()``; a format change stops the stream
after committing what came before and a restart on the checkpointed offset goes on; and one Spark readStream."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import OptionError, SchemaChangeError
from spark_logsource.registry import format_class
from spark_logsource.streaming.stream import ReadBudget
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.streaming import run_available_now
from tests.support.waiting import QUERY_TIMEOUT
from tests.tarantool_cdc_stream.support import DictTarget, create_space, drain, server_rows, transactions

pytestmark = pytest.mark.server

NAMES = ["id", "name", "n"]
COLUMNS = ("op", "lsn", "seq", "id", "name", "n")


def _live(server: LiveTarantool, **options: Any) -> Any:
    return format_class("tarantool-replication")(server.options(mode="FAILFAST", **options)).stream()


def test_live_changes_once_then_a_format_change_stops(cdc_server: LiveTarantool) -> None:
    rng = random.Random(5)
    create_space(cdc_server, "livec")  # empty when the stream starts: the copy starts empty too
    stream = _live(cdc_server, view="space", space="livec", startingPosition="latest", maxRowsPerTrigger=7)
    target = DictTarget(str(cdc_server.directory), "livec")
    seen: list[pa.Table] = []

    def sink(batch: pa.Table) -> None:
        seen.append(batch)
        target.apply(batch)

    offset = drain(stream, stream.initial_offset(), stream.default_budget(), sink)
    assert not seen
    for round_ in range(3):  # the writer goes on between polls
        transactions(cdc_server, "livec", rng, 25, 10 * round_)
        offset = drain(stream, offset, stream.default_budget(), sink)
    rows = pa.concat_tables(seen)
    lsns = rows.column("lsn").to_pylist()
    assert len(lsns) == len(set(lsns)) and lsns == sorted(lsns)
    assert rows.column("seq").to_pylist() == lsns  # one writer: seq is the LSN
    assert len(seen) >= 3 and {"INSERT", "REPLACE", "UPDATE", "UPSERT", "DELETE"} <= set(rows.column("op").to_pylist())
    assert target.plain(NAMES) == server_rows(cdc_server, "livec", NAMES)

    # a format change: the batches before it are committed, then the stop; a restart goes on
    transactions(cdc_server, "livec", rng, 5, 0)
    change_lsn = int(cdc_server.value("box.info.lsn")) + 1
    cdc_server.eval("box.space.livec:format({{'id', 'unsigned'}, {'name', 'string'}, {'n', 'integer'}, "
                    "{'note', 'string', is_nullable = true}})")
    cdc_server.eval("box.space.livec:replace{700, 'seven hundred', 7, 'noted'}")
    committed: list = []
    with pytest.raises(SchemaChangeError) as caught:
        drain(stream, offset, ReadBudget(), sink, committed)
    message = str(caught.value)
    assert "schema change" in message and f"lsn {change_lsn}" in message and "'note'" in message
    assert 700 not in target.rows
    restarted = _live(cdc_server, view="space", space="livec", startingPosition="latest")
    assert "note" in restarted.schema().names
    drain(restarted, committed[-1], ReadBudget(), sink)
    names = [*NAMES, "note"]
    assert target.plain(names) == server_rows(cdc_server, "livec", names)
    assert target.plain(names)[700] == {"id": 700, "name": "seven hundred", "n": 7, "note": "noted"}


def test_live_refuses_what_it_cannot_do(cdc_server: LiveTarantool) -> None:
    with pytest.raises(OptionError, match="startingPosition=snapshot is for the directory tail"):
        _live(cdc_server, view="space", space="t", startingPosition="snapshot").initial_offset()
    with pytest.raises(OptionError, match="has no space 'nope'"):
        _live(cdc_server, view="space", space="nope")


@pytest.mark.spark
def test_spark_read_stream_of_the_live_source(spark: Any, cdc_server: LiveTarantool, tmp_path: Path) -> None:
    rng = random.Random(3)
    create_space(cdc_server, "sparkc")
    start = cdc_server.vclock()
    transactions(cdc_server, "sparkc", rng, 40, 0)
    options = {k: str(v) for k, v in cdc_server.options(view="space", space="sparkc", mode="FAILFAST",
                                                        startingPosition=f'{{"1": {start[1]}}}').items()}
    df = spark.readStream.format("tarantool-replication").options(**options).load()
    got: list[pa.Table] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        got.append(pa.Table.from_pylist([r.asDict() for r in batch_df.select(*COLUMNS).collect()]))

    run_available_now(df, tmp_path / "ckpt", sink, timeout=QUERY_TIMEOUT)
    changes = pa.concat_tables([t for t in got if t.num_rows])
    assert changes.num_rows > 40
    lsns = changes.column("lsn").to_pylist()
    assert len(lsns) == len(set(lsns)) and changes.column("seq").to_pylist() == lsns
    # the same changes as the directory's view=space, value for value
    import spark_logsource

    batch_view = spark_logsource.read("tarantool-xlog", str(cdc_server.directory), view="space", space="sparkc",
                                      mode="FAILFAST").select(list(COLUMNS))
    want = [r for r in batch_view.to_pylist() if r["lsn"] > start[1]]
    ours = sorted(changes.to_pylist(), key=lambda r: r["lsn"])
    assert [{k: v for k, v in r.items() if k != "seq"} for r in ours] == \
           [{k: v for k, v in r.items() if k != "seq"} for r in want]
