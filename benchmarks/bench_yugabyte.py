"""Throughput of the ``yugabyte-wal`` reader against the framing limit, without and with Spark.

Builds (once) a WAL directory of at least ``--ops`` operations by copying the fixture segments under many
``table-<id>/tablet-<id>`` folders (the active segments cut after their last entry, so that 64 KiB of
preallocated zeros per copy do not dominate), then measures:

- framing: every segment opened, every entry header and body CRC checked, nothing decoded (the limit);
- ``iter_batches`` of the operations view and of the writes view (rows/s, and ops/s as a ratio to framing), with
  the C kernel (``yugabyte/_kernel.c``; the writes view's pairs in ``_kernel_writes.c``) and with the pure-Python
  reference
  (``SPARK_LOGSOURCE_PURE_PYTHON=1``), side by side in one run;
- ``spark.read.format("yugabyte-wal")`` on ``local[2]``, aggregating every row.

    .venv/bin/python benchmarks/bench_yugabyte.py --ops 1000000 [--dir /tmp/yb-bench] [--no-spark] [--repeat 3]

Prints a markdown table: seconds, rows/s, and the ratio to the framing walk (best of ``--repeat`` runs each).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from spark_logsource.api import iter_batches  # noqa: E402
from spark_logsource.io.fs import open_input  # noqa: E402
from spark_logsource.yugabyte.reader import walk_segment  # noqa: E402
from spark_logsource.yugabyte.segment import EntryScanner, RawBatch, open_segment, segment_window  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "yugabyte-wal" / "wals"
#: Fixture segments copied into every set (the one with a bad CRC in the middle is left out).
DAMAGED = "tablet-fdae9d6b7d4d7d370c082f8c452f28aa"


def template() -> list[tuple[str, str, bytes]]:
    """(table folder, tablet id, segment name, bytes) of one copy; active segments cut after their last entry."""
    out = []
    for seg in sorted(FIXTURES.rglob("wal-*[0-9]")):
        if seg.parent.name == DAMAGED:
            continue
        walk = walk_segment(str(seg))
        if walk.info.kind == "uninitialized":
            continue
        data = seg.read_bytes()
        if walk.info.kind == "active":
            data = data[:walk.end_offset]
        out.append((seg.parent.parent.name, seg.parent.name[len("tablet-"):], seg.name, data))
    return out


def build(directory: Path, ops: int) -> tuple[int, int]:
    """Fill ``directory`` with enough copies for ``ops`` operations: (operations, files)."""
    segments = template()
    per_copy = sum(len(b.entries) for *_, data in segments for b in _batches(data))
    copies = -(-ops // per_copy)
    marker = directory / f".built-{copies}"
    if marker.exists():
        return copies * per_copy, copies * len(segments)
    shutil.rmtree(directory, ignore_errors=True)
    for i in range(copies):
        for table, tablet, name, data in segments:
            folder = directory / table / f"tablet-{i:08x}{tablet[8:]}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
    marker.write_text("")
    return copies * per_copy, copies * len(segments)


def _batches(data: bytes):
    import io

    from spark_logsource.yugabyte.messages import decode_batch

    source = io.BytesIO(data)
    info = open_segment(source, "<bytes>", len(data))
    for item in EntryScanner(source, info):
        if isinstance(item, RawBatch):
            yield decode_batch(item.body)


def framing(directory: Path) -> tuple[float, int]:
    """Seconds to open every segment and check every entry's CRCs; the number of entry batches."""
    start = time.perf_counter()
    batches = 0
    for path in sorted(directory.rglob("wal-*")):
        with open_input(str(path)) as source:
            window = segment_window(source)
            info = open_segment(source, str(path), window=window)
            for item in EntryScanner(source, info, window=window):
                batches += isinstance(item, RawBatch)
    return time.perf_counter() - start, batches


def arrow(directory: Path, view: str, twin: str) -> tuple[float, int]:
    """``iter_batches`` of ``view`` on the C kernel (``c``) or the pure-Python reference (``python``)."""
    if twin == "python":
        os.environ["SPARK_LOGSOURCE_PURE_PYTHON"] = "1"
    else:
        os.environ.pop("SPARK_LOGSOURCE_PURE_PYTHON", None)
    try:
        start = time.perf_counter()
        rows = 0
        for batch in iter_batches("yugabyte-wal", str(directory), view=view, includeSuperseded=True):
            rows += batch.num_rows
        return time.perf_counter() - start, rows
    finally:
        os.environ.pop("SPARK_LOGSOURCE_PURE_PYTHON", None)


def spark(directory: Path, view: str) -> tuple[float, int]:
    from pyspark.sql import SparkSession

    from spark_logsource.spark.sources import data_source

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "2g").getOrCreate())
    session.dataSource.register(data_source("yugabyte-wal"))
    df = session.read.format("yugabyte-wal").option("view", view).option("includeSuperseded", "true") \
        .option("maxPartitionBytes", str(64 << 20)).load(str(directory))
    start = time.perf_counter()
    rows = df.selectExpr("count(*) as n", "sum(index) as s").collect()[0]["n"]
    return time.perf_counter() - start, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/yb-wal-bench"))
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs of each measurement")
    args = parser.parse_args()
    ops, files = build(args.dir, args.ops)
    print(f"WAL directory {args.dir}: {ops} operations in {files} segments; load average {os.getloadavg()[0]:.2f}\n")
    framing(args.dir)  # warm: the page cache and the imports count for neither side
    runs = [("framing walk (CRC only; rows: entry batches)", lambda: framing(args.dir))]
    for view in ("operations", "writes"):
        for twin in ("c", "python"):
            runs.append((f"iter_batches view={view}, {twin}", lambda v=view, t=twin: arrow(args.dir, v, t)))
    print("| run | seconds | rows | rows/s | ops/s ÷ framing |")
    print("|---|---|---|---|---|")
    frame_rate = 0.0
    for name, run in runs:
        secs, rows = min((run() for _ in range(args.repeat)), key=lambda r: r[0])
        frame_rate = frame_rate or ops / secs
        print(f"| {name} | {secs:.2f} | {rows} | {rows / secs:,.0f} | {ops / secs / frame_rate:.2f}× |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if not args.no_spark:
        for view in ("operations", "writes"):
            secs, rows = spark(args.dir, view)
            print(f"Spark local[2] view={view}: {secs:.1f} s, {rows} rows, {rows / secs:,.0f} rows/s, "
                  f"{ops / secs / frame_rate:.2f} x framing (single process)")


if __name__ == "__main__":
    main()
