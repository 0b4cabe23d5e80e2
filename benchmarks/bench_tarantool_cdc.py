"""Benchmark: typed CDC streaming (``view=space``) of a Tarantool space, against the batch read of the same xlogs,
the apply function against ``view=state``, and the commit-to-row latency under a 1 s trigger (issue #24,
"Measure").

1. Throughput. A real Tarantool 2.6 on loopback (``tests/support/servers/tarantool_live.py``) writes ≥ ``--rows``
   changes of one space of typed fields (unsigned key, string with a unique secondary index, integer, number,
   boolean, decimal, uuid, map, array, nullable string, number): transactions of 10 statements cycling through
   INSERT, REPLACE, two UPDATEs (``+`` on an integer, a double and a decimal, ``=``), an UPSERT of a present key,
   an UPSERT of an absent key and a DELETE. The server's xlogs are copied into a directory of their own. Then,
   side by side, ``--repeat`` times, each draining Arrow batches:

   * ``iter_batches("tarantool-xlog", directory, view="space", space="cdc")``: the batch read, the peer of the
     others (issue floor: streams ≥ 0.7× its rows/s);
   * the directory tail: ``follow("tarantool-xlog", directory, view="space", startingPosition="earliest",
     stop_when_idle=True)`` (the LogStream calls Spark makes: ``latest_offset``, ``plan``, ``read_slice``);
   * the live source: ``follow("tarantool-replication", view="space", startingPosition=<vclock before the
     space's creation>, stop_when_idle=True)``, an anonymous replica over loopback TCP (the driver reads each
     range for the catalog rows, the executor again for the space's rows);
   * Spark ``local[2]``: ``spark.readStream`` of the directory with ``trigger(availableNow=True)`` into the
     ``noop`` sink, against ``spark.read`` of the same directory into ``noop``.

   And the apply: ``apply_changes(space_spec(directory, "cdc"), changes, None)`` over every change of the workload
   at once (the changes read beforehand), against ``iter_batches(..., view="state")`` replaying the same xlogs.

2. Latency (issue floor: p99 ≤ 3 s). A Lua fiber inserts one row every ``--period`` seconds into space ``ticks``,
   its second field ``clock.time()`` just before the insert (an autocommit: the commit follows at once). A Spark
   query (``readStream.format("tarantool-replication")``, ``view=space``, ``trigger(processingTime="1 second")``,
   ``foreachBatch``) stamps each row's arrival after its batch is collected; p50/p95/p99 of (arrival − commit)
   over the rows written in ``--seconds``. The same with ``follow()`` in this process, polling every
   ``--trigger`` seconds.

With ``--profile``, one run of each stream and of the apply is profiled (cProfile) and the top functions printed.

    python3 benchmarks/bench_tarantool_cdc.py [--workdir DIR] [--rows 200000] [--repeat 3] [--seconds 20]
        [--period 0.05] [--trigger 1] [--no-spark] [--no-latency] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cdc_report import (  # noqa: E402  (the benchmarks/ folder is sys.path[0])
    add_common_arguments,
    command_line,
    latency_table,
    load_average,
    setup,
    throughput_table,
    time_spark,
)
from local_spark import timed  # noqa: E402

from tests.support.servers.tarantool_live import LiveTarantool  # noqa: E402

log = logging.getLogger("bench_tarantool_cdc")

SPACE = "cdc"
TICKS = "ticks"
STATEMENTS_PER_TXN = 10

# Run with dofile() on the admin console. Live ids are lo+1 .. hi; an insert is forced while fewer than 10 are
# live, so every UPDATE, REPLACE, UPSERT and DELETE names a stored tuple and is logged.
WORKLOAD_LUA = """
local decimal, uuid = require('decimal'), require('uuid')
local s = box.space.cdc
local function M(t) return setmetatable(t, {__serialize = 'map'}) end
local function row(id)
    return {id, 'c' .. id, id * 10, id + 0.5, id %% 2 == 0, decimal.new(id .. '.25'),
            uuid.fromstr(string.format('00000000-0000-0000-0000-%%012d', id)), M{k = 'v' .. id, n = id},
            {id, 'a'}, (id %% 7 == 0) and box.NULL or ('note ' .. id), id / 3}
end
local lo, hi, n = 0, 0, 0
local counts = {INSERT = 0, REPLACE = 0, UPDATE = 0, UPSERT = 0, DELETE = 0}
while n < %(rows)d do
    box.begin()
    for _ = 1, %(per_txn)d do
        local k = n %% 10
        if k < 4 or hi - lo < 10 then
            hi = hi + 1 s:insert(row(hi)) counts.INSERT = counts.INSERT + 1
        elseif k == 4 then
            local t = row(hi - 3) t[3] = -t[3] s:replace(t) counts.REPLACE = counts.REPLACE + 1
        elseif k == 5 then
            s:update(hi - 5, {{'+', 'n', 1}, {'=', 'note', 'u' .. n}, {'+', 'amount', decimal.new('0.5')}})
            counts.UPDATE = counts.UPDATE + 1
        elseif k == 6 then
            s:update(hi - 7, {{'+', 'x', 0.25}, {'=', 'ok', true}}) counts.UPDATE = counts.UPDATE + 1
        elseif k == 7 then
            s:upsert(row(hi - 2), {{'+', 'n', 2}, {'=', 'attrs.k', 'w'}}) counts.UPSERT = counts.UPSERT + 1
        elseif k == 8 then
            hi = hi + 1 s:upsert(row(hi), {{'+', 'n', 2}}) counts.UPSERT = counts.UPSERT + 1
        else
            lo = lo + 1 s:delete(lo) counts.DELETE = counts.DELETE + 1
        end
        n = n + 1
    end
    box.commit()
end
local f = io.open('%(out)s', 'w') f:write(require('json').encode(counts)) f:close()
"""

SCHEMA_LUA = (
    "local s = box.schema.space.create('cdc', {format = {{name = 'id', type = 'unsigned'}, "
    "{name = 'code', type = 'string'}, {name = 'n', type = 'integer'}, {name = 'x', type = 'number'}, "
    "{name = 'ok', type = 'boolean'}, {name = 'amount', type = 'decimal'}, {name = 'uid', type = 'uuid'}, "
    "{name = 'attrs', type = 'map'}, {name = 'list', type = 'array'}, "
    "{name = 'note', type = 'string', is_nullable = true}, {name = 'score', type = 'number'}}}) "
    "s:create_index('pk') s:create_index('by_code', {parts = {{field = 2, type = 'string'}}, unique = true}) "
    "local t = box.schema.space.create('ticks', {format = {{name = 'id', type = 'unsigned'}, "
    "{name = 'committed', type = 'number'}}}) t:create_index('pk')")

TICKER_LUA = ("require('fiber').create(function() local fiber, clock = require('fiber'), require('clock') "
              "local s, i, stop = box.space.ticks, {first}, clock.time() + {seconds} "
              "while clock.time() < stop do s:insert{{i, clock.time()}} i = i + 1 fiber.sleep({period}) end "
              "s:replace{{{marker}, -1}} end)")
MARKER = 9_999_999  # the ticker's last row: every row before it is committed
PRIMING = 10_000_000  # rows written until a reader is up; not measured
#: ``durationMs`` of the Spark latency query's non-empty micro-batches (its last progress reports)
TRIGGERS: list[dict[str, int]] = []


# -- the workload ------------------------------------------------------------------------------------------------
def make_workload(server: LiveTarantool, workdir: Path, rows: int) -> dict[str, Any]:
    """The space, ≥ ``rows`` changes of it, and a copy of the server's xlogs (nothing else writes meanwhile)."""
    before = server.vclock()
    server.eval(SCHEMA_LUA)
    script, out = workdir / "workload.lua", workdir / "counts.json"
    script.write_text(WORKLOAD_LUA % {"rows": rows, "per_txn": STATEMENTS_PER_TXN, "out": out})
    started = time.perf_counter()
    server.eval(f"dofile('{script}')", timeout=1800)
    counts = json.loads(out.read_text())
    log.info("wrote %d changes in %.1f s", sum(counts.values()), time.perf_counter() - started)
    copies = workdir / "xlogs"
    shutil.rmtree(copies, ignore_errors=True)
    copies.mkdir()
    for path in server.xlog_files():
        shutil.copy2(path, copies / path.name)
    live = int(server.value(f"box.space.{SPACE}:len()"))
    return {"before": before, "copies": copies, "counts": counts, "rows": sum(counts.values()), "live": live}


# -- the readers -------------------------------------------------------------------------------------------------
def batch_space(directory: Path) -> int:
    import spark_logsource

    return sum(b.num_rows for b in spark_logsource.iter_batches("tarantool-xlog", str(directory), view="space",
                                                               space=SPACE))


def tail_follow(directory: Path) -> int:
    import spark_logsource

    return sum(b.num_rows for b, _offset in spark_logsource.follow(
        "tarantool-xlog", str(directory), stop_when_idle=True, view="space", space=SPACE,
        startingPosition="earliest"))


def live_follow(server: LiveTarantool, before: dict[int, int]) -> int:
    import spark_logsource

    start = json.dumps({str(r): lsn for r, lsn in before.items()})
    options: dict[str, Any] = server.options(view="space", space=SPACE, startingPosition=start, readTimeout=30)
    return sum(b.num_rows for b, _offset in spark_logsource.follow("tarantool-replication", [], stop_when_idle=True,
                                                                  **options))


def state_read(directory: Path) -> int:
    import spark_logsource

    return sum(b.num_rows for b in spark_logsource.iter_batches("tarantool-xlog", str(directory), view="state",
                                                               space=SPACE))


def apply_all(spec: Any, changes: Any, expected_rows: int) -> Callable[[], int]:
    from spark_logsource.tarantool.table.apply import apply_changes

    def run() -> int:
        result = apply_changes(spec, changes, None)
        if result.upserts.num_rows != expected_rows:
            raise SystemExit(f"apply: {result.upserts.num_rows} rows to upsert, the space holds {expected_rows}")
        return int(changes.num_rows)

    return run




# -- timing ------------------------------------------------------------------------------------------------------
def profiled(label: str, action: Callable[[], int], top: int = 18) -> str:
    profile = cProfile.Profile()
    profile.enable()
    action()
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return f"### cProfile: {label} (sorted by own time)\n\n```\n{out.getvalue().strip()}\n```"


# -- latency -----------------------------------------------------------------------------------------------------
def _delays(ids: list[Any], committed: list[Any], seen: float) -> tuple[list[float], bool]:
    """(arrival − commit of the measured rows, whether the ticker's end marker is among them)."""
    out = [seen - c for i, c in zip(ids, committed, strict=True) if i is not None and i < MARKER and c is not None]
    return out, MARKER in ids


class Primer:
    """A row every 0.5 s until :meth:`stop`: a reader started at ``latest`` gets a first batch once it is up."""

    def __init__(self, server: LiveTarantool) -> None:
        self.server, self.done = server, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        i = PRIMING
        while not self.done.wait(0.5):
            self.server.eval(f"box.space.{TICKS}:replace{{{i}, require('clock').time()}}")
            i += 1

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def follow_latency(server: LiveTarantool, seconds: float, period: float, trigger: float, first: int) -> list[float]:
    import spark_logsource

    delays: list[float] = []
    options: dict[str, Any] = server.options(view="space", space=TICKS, startingPosition="latest", readTimeout=30)
    batches = cast(Generator[tuple[Any, Any], None, None],
                   spark_logsource.follow("tarantool-replication", [], poll_interval=trigger, **options))
    primer = Primer(server)
    try:
        next(batches)  # the first range: the reader is up
        primer.stop()
        server.eval(TICKER_LUA.format(first=first, seconds=seconds, period=period, marker=MARKER))
        for batch, _offset in batches:
            got, done = _delays(batch.column("id").to_pylist(), batch.column("committed").to_pylist(), time.time())
            delays.extend(got)
            if done:
                break
    finally:
        primer.stop()
        batches.close()
    return delays


def spark_latency(spark: Any, server: LiveTarantool, seconds: float, period: float, trigger: float,
                  first: int) -> list[float]:
    lock = threading.Lock()
    delays: list[float] = []
    called, done = threading.Event(), threading.Event()

    def sink(df: Any, _batch_id: int) -> None:
        table = df.select("id", "committed").toArrow()
        seen = time.time()  # after the collect: the batch's rows are in the driver
        got, end = _delays(table.column("id").to_pylist(), table.column("committed").to_pylist(), seen)
        with lock:
            delays.extend(got)
        called.set()
        if end:
            done.set()

    options = {k: str(v) for k, v in server.options(view="space", space=TICKS, startingPosition="latest",
                                                    readTimeout=30).items()}
    with tempfile.TemporaryDirectory(prefix="bench-tcdc-latency-") as checkpoint:
        query = (spark.readStream.format("tarantool-replication").options(**options).load()
                 .writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
                 .trigger(processingTime=f"{trigger:g} seconds").start())
        primer = Primer(server)
        try:
            if not called.wait(180):
                raise RuntimeError("the Spark query delivered no batch within 180 s")
            primer.stop()
            with lock:
                delays.clear()
            server.eval(TICKER_LUA.format(first=first, seconds=seconds, period=period, marker=MARKER))
            if not done.wait(seconds + 120):
                log.warning("the Spark query did not deliver the ticker's end marker")
            TRIGGERS.extend(p.durationMs for p in query.recentProgress if p.numInputRows)
        finally:
            primer.stop()
            query.stop()
    return delays


def percentiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), q[94], q[98]


# -- report ------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--rows", type=int, default=200_000, help="changes of the space (at least)")
    add_common_arguments(parser, seconds=20.0)
    parser.add_argument("--profile", action="store_true", help="cProfile one run of each stream and the apply")
    args = parser.parse_args(argv)
    setup()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-tarantool-cdc-"))
    shutil.rmtree(workdir / "srv", ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)

    import spark_logsource
    from spark_logsource.tarantool.table.apply import space_spec

    server = LiveTarantool(workdir / "srv", replication_timeout=1.0, wal_max_size=64 << 20)
    server.start()
    results: dict[str, list[tuple[float, float]]] = {}
    latency: dict[str, list[float]] = {}
    profiles: list[str] = []
    spark = None
    try:
        workload = make_workload(server, workdir, args.rows)
        n, copies, before = workload["rows"], workload["copies"], workload["before"]
        batch_space(copies)  # warm-up, not timed: imports, the kernel, the page cache
        for _ in range(args.repeat):
            results.setdefault("batch", []).append(timed("batch", lambda: batch_space(copies), n))
            results.setdefault("tail", []).append(timed("tail", lambda: tail_follow(copies), n))
            results.setdefault("live", []).append(timed("live", lambda: live_follow(server, before), n))
        changes = spark_logsource.read("tarantool-xlog", str(copies), view="space", space=SPACE)
        spec = space_spec(str(copies), SPACE)
        apply = apply_all(spec, changes, workload["live"])
        for _ in range(args.repeat):
            results.setdefault("state", []).append(
                timed("state", lambda: n if state_read(copies) == workload["live"] else -2, n))
            results.setdefault("apply", []).append(timed("apply", apply, n))
        if args.profile:
            profiles.append(profiled("the directory tail (follow)", lambda: tail_follow(copies)))
            profiles.append(profiled("the live stream (follow)", lambda: live_follow(server, before)))
            profiles.append(profiled("apply_changes over the whole workload", apply))
        if not args.no_spark:
            spark = time_spark(results, "tarantool-xlog", copies, {"view": "space", "space": SPACE}, n, args.repeat)
        if not args.no_latency:
            latency["follow"] = follow_latency(server, args.seconds, args.period, args.trigger, 1)
            if spark is not None:
                latency["spark"] = spark_latency(spark, server, args.seconds, args.period, args.trigger, 1_000_000)
    finally:
        if spark is not None:
            spark.stop()
        server.stop()

    print(report(results, latency, workload, command_line(__file__, REPO), args))
    for text in profiles:
        print()
        print(text)
    return 0


def report(results: dict[str, list[tuple[float, float]]], latency: dict[str, list[float]],
           workload: dict[str, Any], command: str, args: argparse.Namespace) -> str:
    n = workload["rows"]
    files = sorted(workload["copies"].glob("*.xlog"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    labels = {
        "batch": f'`iter_batches("tarantool-xlog", directory, view="space", space="{SPACE}")` (the peer)',
        "tail": '`follow("tarantool-xlog", directory, view="space", stop_when_idle=True)`: the directory tail',
        "live": '`follow("tarantool-replication", view="space", stop_when_idle=True)`: the live stream '
                "(loopback TCP)¹",
        "spark batch": "Spark `local[2]`: `spark.read` of the directory, `view=space` → `noop` (the peer)²",
        "spark stream": "Spark `local[2]`: `readStream`, `trigger(availableNow=True)` → `noop`²",
        "state": f'`iter_batches(..., view="state", space="{SPACE}")`: the replay (the peer of the apply)',
        "apply": "`apply_changes(spec, changes, None)` over every change at once (changes read beforehand)",
    }
    peers = {"tail": "batch", "live": "batch", "spark stream": "spark batch", "apply": "state"}
    c = workload["counts"]
    lines = [
        f"Workload: {n:,} changes of space `{SPACE}` ({c['INSERT']:,} INSERT, {c['REPLACE']:,} REPLACE, "
        f"{c['UPDATE']:,} UPDATE, {c['UPSERT']:,} UPSERT, {c['DELETE']:,} DELETE; transactions of "
        f"{STATEMENTS_PER_TXN} statements; 11 fields: unsigned, string (unique secondary index), integer, number, "
        f"boolean, decimal, uuid, map, array, nullable string, number), {workload['live']:,} tuples at the end; "
        f"{len(files)} xlog file(s), {size_mb:.1f} MB, Tarantool 2.6. {os.cpu_count()} cores, load average "
        f"{load_average()} at the end.",
        "",
        f"Command: `{command}`",
        "",
        *throughput_table(results, labels, peers, n, "changes"),
    ]
    lines += ["", "¹ this process only: the server's relay runs in tarantool, not counted. ² this process, the JVM "
                  "and its Python workers (from /proc)."]
    if latency:
        lines += ["", f"Commit-to-row latency: one row per transaction every {args.period:g} s for "
                      f"{args.seconds:g} s into space `{TICKS}`, its field `committed` = `clock.time()` at the "
                      "insert.", ""]
        names = {"follow": f'`follow("tarantool-replication", view="space", poll_interval={args.trigger:g})`',
                 "spark": f'Spark `readStream.format("tarantool-replication")`, `view=space`, '
                          f'`trigger(processingTime="{args.trigger:g} second")`, `foreachBatch`'}
        lines += latency_table(latency, names, percentiles)
        if TRIGGERS:
            parts = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "triggerExecution")
            cells = [f"{k} {statistics.median(d.get(k, 0) for d in TRIGGERS) / 1000:.2f} / "
                     f"{max(d.get(k, 0) for d in TRIGGERS) / 1000:.2f}" for k in parts]
            lines += ["", f"Spark micro-batches with rows ({len(TRIGGERS)}), seconds, median / max: "
                          + ", ".join(cells) + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
