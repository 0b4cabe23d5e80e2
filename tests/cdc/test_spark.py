"""The ``foreachBatch`` recipes of ``docs/cdc.md``, run as written on Spark over the workload's changes.

The session here has no Delta Lake (its jars cannot be fetched), so the recipe's ``MERGE INTO`` text is checked by
Spark's own SQL parser, its ``latest_per_key`` is run by Spark and compared with the Arrow reduction, and the
delta-rs recipe (``upsert_with_delta_rs``) is run batch by batch into a Delta table that must equal the server's
``SELECT *`` after each binlog file.
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from spark_logsource.cdc import latest_changes
from tests.cdc.workload import KEYS, TABLE, CdcWorkload, assert_matches_server, file_number, read_changes
from tests.support.waiting import QUERY_TIMEOUT

pytestmark = pytest.mark.spark

log = logging.getLogger(__name__)

DOC = Path(__file__).resolve().parents[2] / "docs" / "cdc.md"


def _recipe(marker: str) -> str:
    """The Python block right after ``<!-- recipe: marker -->`` in docs/cdc.md."""
    found = re.search(rf"<!-- recipe: {re.escape(marker)} -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/cdc.md has no recipe {marker!r}"
    return found.group(1)


def _load(spark: Any, workload: CdcWorkload) -> Any:
    return (spark.read.format("mysql-binlog").option("view", "table").option("table", TABLE)
            .option("mode", "FAILFAST").load([str(f) for f in workload.files]))


def _batches(df: Any, workload: CdcWorkload) -> list[Any]:
    """One micro-batch per binlog file, cut by ``seq`` (``file_number * 2**64`` and up)."""
    out = []
    for path in workload.files:
        low = file_number(path.name) * 2**64
        out.append(df.where(f"seq >= {low} AND seq < {low + 2**64}"))
    return out


def test_foreach_batch_recipe_with_delta_rs(spark: Any, cdc_workload: CdcWorkload, tmp_path: Path) -> None:
    scope: dict[str, Any] = {}
    exec(_recipe("foreachBatch"), scope)  # defines KEYS, merge_sql, latest_per_key, upsert
    exec(_recipe("foreachBatch delta-rs"), scope)
    assert scope["KEYS"] == KEYS
    scope["TARGET_PATH"] = str(tmp_path / "accounts")
    expected = [*cdc_workload.at_rotations, cdc_workload.final]
    for batch_id, batch in enumerate(_batches(_load(spark, cdc_workload), cdc_workload)):
        for _ in range(2):  # a batch run again (a restart before the offset was committed) changes nothing
            scope["upsert_with_delta_rs"](batch, batch_id)
        rows = DeltaTable(scope["TARGET_PATH"]).to_pyarrow_table().to_pylist()
        assert_matches_server(rows, cdc_workload, expected[batch_id])


def test_foreach_batch_recipe_dedupe_and_merge_text(spark: Any, cdc_workload: CdcWorkload) -> None:
    scope: dict[str, Any] = {}
    exec(_recipe("foreachBatch"), scope)
    df = _load(spark, cdc_workload)
    arrow, _ = read_changes(cdc_workload.files, cdc_workload.truncate)
    truncates = 0
    for batch, path in zip(_batches(df, cdc_workload), cdc_workload.files, strict=True):
        latest, cut = scope["latest_per_key"](batch)
        low = file_number(path.name) * 2**64
        seq = arrow.column("seq")
        in_file = pc.and_(pc.greater_equal(seq, pa.scalar(Decimal(low), seq.type)),
                          pc.less(seq, pa.scalar(Decimal(low + 2**64), seq.type)))
        ours = latest_changes(arrow.filter(in_file), KEYS)
        if cut is not None:
            truncates += 1
            assert ours.column("op")[0].as_py() == "t" and ours.column("seq")[0].as_py() == cut
            ours = ours.slice(1)
        spark_rows = sorted(latest.select("op", "seq", "id").toArrow().to_pylist(), key=lambda r: r["seq"])
        assert spark_rows == ours.select(["op", "seq", "id"]).to_pylist()
        assert spark_rows  # every file changes the table
        columns = [c for c in latest.columns if c != "op"]
        sql = scope["merge_sql"]("target", "changes", KEYS, columns, cut)
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)  # Spark's parser accepts the text
        text = plan.toString()
        assert plan.getClass().getSimpleName() == "MergeIntoTable", text
        assert text.lower().count("deleteaction(") == (2 if cut is not None else 1), text
    assert truncates == 1


def test_foreach_batch_recipe_in_a_stream_that_fails_after_a_merge(spark: Any, cdc_workload: CdcWorkload,
                                                                   tmp_path: Path) -> None:
    """readStream (one binlog file per micro-batch) with the delta-rs recipe; the first run fails right after the
    second batch's MERGE, before Spark commits its offset. The restart on the same checkpoint runs that batch again
    and the rest: the table equals the server's, as if each change were applied once."""
    scope: dict[str, Any] = {}
    exec(_recipe("foreachBatch"), scope)
    exec(_recipe("foreachBatch delta-rs"), scope)
    scope["TARGET_PATH"] = str(tmp_path / "accounts")
    ran: list[int] = []

    def failing(batch: Any, batch_id: int) -> None:
        scope["upsert_with_delta_rs"](batch, batch_id)
        ran.append(batch_id)
        if batch_id == 1:
            raise RuntimeError("the driver dies before the offset of batch 1 is committed")

    def recording(batch: Any, batch_id: int) -> None:
        scope["upsert_with_delta_rs"](batch, batch_id)
        ran.append(batch_id)

    def run(handler: Any) -> Any:
        query = (spark.readStream.format("mysql-binlog").option("view", "table").option("table", TABLE)
                 .option("mode", "FAILFAST").option("maxFilesPerTrigger", 1).load(str(cdc_workload.files[0].parent))
                 .writeStream.foreachBatch(handler).option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(QUERY_TIMEOUT)
        except Exception as exc:  # the query's failure, read below from query.exception()
            log.info("the query stopped: %s", str(exc).splitlines()[0])
        assert not query.isActive, "the query did not end in time"
        return query.exception()

    assert run(failing) is not None
    assert ran == [0, 1]
    rows = DeltaTable(scope["TARGET_PATH"]).to_pyarrow_table().to_pylist()
    assert_matches_server(rows, cdc_workload, cdc_workload.at_rotations[1])
    assert run(recording) is None
    assert ran == [0, 1, 1, 2]  # batch 1 again (its offset was never committed), then batch 2
    rows = DeltaTable(scope["TARGET_PATH"]).to_pyarrow_table().to_pylist()
    assert_matches_server(rows, cdc_workload)
