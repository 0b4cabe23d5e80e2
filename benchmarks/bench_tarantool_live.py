"""Live Tarantool replication (``tarantool-replication``): backlog throughput and commit-to-row latency.

Starts a real tarantool on loopback (``tests/support/servers/tarantool_live.py``), then:

1. **Backlog**: writes ``--rows`` rows (default 1M, 1000-row transactions), reads the whole vclock range as an
   anonymous replica through ``LiveStream.plan`` / ``read_slice`` (``tupleFormat`` msgpack and variant), and
   reads the same rows from the server's own xlog files with Tarantool's ``xlog.pairs()`` (a Lua loop touching
   every row's header and body). And the limit of any reader over one connection, the **drain**: the same
   SUBSCRIBE, and the relay's bytes up to the range's last row received into one reused buffer and thrown away
   (not framed, not decoded; their count is taken once beforehand by framing them). Prints rows/s (best of
   ``--repeat`` runs each: the machine may be shared) and the ratios to xlog.pairs() (the floor is 0.5×) and to
   the drain, by wall time and by the reader's own CPU time (the live wall time also waits for the server's
   relay, which writes one row per syscall, and for the scheduler). Then the range read in parts over several
   connections at once (``iter_batches`` with ``connections=N`` for each N of ``--connections``, default 1,2,4,8:
   one relay thread per connection on the server) and the drain over the same N connections; and, unless
   ``--no-spark``, ``spark.read.format("tarantool-replication")`` of the range into the ``noop`` sink in
   ``local[2]`` with the same numbers of ``connections`` (one Spark task a part; CPU of the JVM and its Python
   workers).
2. **Latency**: a Lua fiber commits ``--rate`` single-row transactions per second (default 10 000) for
   ``--seconds``; the reader (``batchSize=1``: every network read is handed over at once) records, per row,
   arrival time minus the row's WAL timestamp. Prints p50 / p99 / max and the rate actually written.
3. **Spark latency** (skipped with ``--no-spark``): a Spark ``local[2]`` streaming query
   ``readStream.format("tarantool-replication")`` with ``startingPosition=latest`` and
   ``trigger(processingTime="1 second")`` into a ``foreachBatch`` sink, while the same Lua writer commits
   ``--rate`` single-row transactions per second for ``--seconds``. The sink collects each batch's
   ``timestamp`` column and records, per row, the time the collect returned (the rows are in the driver) minus
   the row's WAL timestamp. Rows committed in the first ``--warmup`` seconds of the writer (default 3) are not
   counted: the first triggers also pay for the Python workers' start-up. Prints p50 / p99 / max, the number of
   micro-batches and their rows and durations.

Usage: python3 benchmarks/bench_tarantool_live.py [--rows 1000000] [--rate 10000] [--seconds 20] [--no-spark]
    [--connections 1,2,4,8] [--no-latency]
(``--rows 0`` skips the backlog part.)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from local_spark import spark_cpu, spark_session  # noqa: E402  (the benchmarks/ folder is sys.path[0])

import spark_logsource  # noqa: E402
from spark_logsource.registry import format_class  # noqa: E402
from spark_logsource.tarantool.stream.live import make_offset  # noqa: E402
from tests.support.servers.tarantool_live import LiveTarantool  # noqa: E402

log = logging.getLogger("bench_tarantool_live")

PAIRS_LUA = """
local xlog = require('xlog')
local n, sum = 0, 0
for i = 1, #arg do
    for _, row in xlog.pairs(arg[i]) do
        local lsn = row.HEADER.lsn
        if lsn ~= nil then sum = sum + lsn end
        if row.BODY ~= nil and row.BODY.tuple ~= nil then n = n + 1 end
    end
end
io.stdout:write(n, '\\n')
os.exit(0)
"""

BACKLOG_LUA = ("local s = box.space.t for first = 1, {rows}, 1000 do box.begin() "
               "for i = first, math.min(first + 999, {rows}) do "
               "s:replace{{i, 'name ' .. i, i * 1.5, i % 3 == 0, {{a = i, b = 'x'}}}} end box.commit() end")

WRITER_LUA = ("require('fiber').create(function() local fiber, clock = require('fiber'), require('clock') "
              "local s, n, t0 = box.space.t, 0, clock.time() "
              "while n < {total} do local due = math.min({total}, math.floor((clock.time() - t0) * {rate})) "
              "while n < due do n = n + 1 s:replace{{2000000 + n, n}} end fiber.sleep(0.001) end "
              "box.space.t:replace{{1999999, clock.time() - t0}} end)")


def stream_of(server: LiveTarantool, **options: object):
    return format_class("tarantool-replication")(server.options(**options)).stream()


def read_live(server: LiveTarantool, start: dict[int, int], end: dict[int, int], tuple_format: str) -> int:
    stream = stream_of(server, tupleFormat=tuple_format, readTimeout=30)
    rs = server.value("box.info.cluster.uuid")
    n = 0
    for s in stream.plan(make_offset(rs, start), make_offset(rs, end)):
        for batch in stream.read_slice(s):
            n += batch.num_rows
    return n


def _range_options(server: LiveTarantool, start: dict[int, int], end: dict[int, int], **extra: object) -> dict:
    return server.options(readTimeout=30, startingPosition=json.dumps({str(r): v for r, v in start.items()}),
                          endingPosition=json.dumps({str(r): v for r, v in end.items()}), **extra)


def read_parts(server: LiveTarantool, start: dict[int, int], end: dict[int, int], tuple_format: str,
               connections: int) -> int:
    """``iter_batches`` of the range: cut into ``connections`` parts read at once (1: one connection)."""
    options = _range_options(server, start, end, tupleFormat=tuple_format, connections=connections)
    return sum(b.num_rows for b in spark_logsource.iter_batches("tarantool-replication", [], **options))


def spark_read(spark, server: LiveTarantool, start: dict[int, int], end: dict[int, int], connections: int,
               count: bool = False) -> int:
    """``spark.read`` of the range into ``noop`` (one task a part), or its row count."""
    options = {k: str(v) for k, v in _range_options(server, start, end, tupleFormat="msgpack",
                                                    connections=connections).items()}
    df = spark.read.format("tarantool-replication").options(**options).load()
    if count:
        return int(df.count())
    df.write.format("noop").mode("overwrite").save()
    return sum(end.values()) - sum(start.values())


def cut(start: dict[int, int], end: dict[int, int], parts: int) -> list[tuple[dict[int, int], dict[int, int]]]:
    """The range of one origin in ``parts`` equal LSN ranges (as the reader's planner cuts it)."""
    (origin,) = [r for r in end if end[r] > start.get(r, 0)]
    first, last = start.get(origin, 0), end[origin]
    points = [first + (last - first) * i // parts for i in range(parts + 1)]
    return [({**start, origin: points[i]}, {**end, origin: points[i + 1]}) for i in range(parts)]


def drain_parts(server: LiveTarantool, ranges: list[tuple[dict[int, int], int]]) -> int:
    """The drain over one connection per part at once (a thread each: ``recv_into`` lets go of the GIL)."""
    done = [0] * len(ranges)

    def run(i: int) -> None:
        done[i] = drain(server, ranges[i][0], ranges[i][1])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(ranges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if sum(done) != sum(n for _, n in ranges):
        raise RuntimeError("a drain thread failed")
    return sum(done)


def _subscribed(server: LiveTarantool, start: dict[int, int]):
    """A connection subscribed from ``start`` (acknowledging on a timer), as the live reader opens it."""
    stream = stream_of(server, readTimeout=30)
    conn = stream._connect()
    conn.subscribe(conn.replicaset_uuid(), start)
    conn.start_acks(0.25, lambda: dict(start))
    return conn


def relay_bytes(server: LiveTarantool, start: dict[int, int], end: dict[int, int]) -> int:
    """Bytes the relay sends after the SUBSCRIBE reply up to the last row of ``end`` (framed once, in Python)."""
    rows = sum(end.values()) - sum(start.get(r, 0) for r in end)
    conn = _subscribed(server, start)
    try:
        got, total = 0, 0
        buffer = conn.buffer
        while got < rows:
            raw = buffer.next()
            if raw is None:
                conn.receive("rows")
                continue
            total += 5 + len(raw)  # the server always writes the length as 0xce + 4 bytes
            if raw[2] != 0:  # not an OK (heartbeat)
                got += 1
        return total
    finally:
        conn.close()


def drain(server: LiveTarantool, start: dict[int, int], nbytes: int) -> int:
    """The limit: the same relay bytes received into one reused buffer and thrown away (no framing, no decoding)."""
    conn = _subscribed(server, start)
    try:
        left = nbytes - conn.buffer.buffered()  # bytes that came with the SUBSCRIBE reply
        sock = conn._sock
        assert sock is not None
        chunk = bytearray(4 << 20)
        view = memoryview(chunk)
        while left > 0:
            n = sock.recv_into(view, min(left, len(chunk)))
            if not n:
                raise RuntimeError("the server closed the connection")
            left -= n
        return nbytes
    finally:
        conn.close()


def pairs_rows(server: LiveTarantool, workdir: Path) -> int:
    script = workdir / "pairs.lua"
    script.write_text(PAIRS_LUA)
    files = [str(p) for p in server.xlog_files()]
    out = subprocess.run(["tarantool", str(script), *files], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1])


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the xlog.pairs() tarantool runs as a child)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(fn, cpu=_cpu) -> tuple[int, float, float]:
    """(rows, wall seconds, CPU seconds of the reader: this process or the xlog.pairs() child, not the server)."""
    began, cpu_began = time.perf_counter(), cpu()
    n = fn()
    return n, time.perf_counter() - began, cpu() - cpu_began


def backlog(server: LiveTarantool, workdir: Path, rows: int, repeat: int, connections: list[int], spark) -> None:
    start = server.vclock()
    began = time.perf_counter()
    server.eval(BACKLOG_LUA.format(rows=rows), timeout=600)
    end = server.vclock()
    print(f"wrote {rows} rows in {time.perf_counter() - began:.1f} s; vclock {start} -> {end}")
    parts = {n: [(a, relay_bytes(server, a, b)) for a, b in cut(start, end, n)] for n in connections if n > 1}
    nbytes = relay_bytes(server, start, end)
    rows_per_byte = (sum(end.values()) - sum(start.values())) / nbytes
    print(f"the relay sends {nbytes:,} bytes for these rows")
    readers = [
        ("xlog.pairs() (Lua, server files)", lambda: pairs_rows(server, workdir), _cpu),
        ("drain: relay bytes, not decoded", lambda: round(drain(server, start, nbytes) * rows_per_byte), _cpu),
        ("live, tupleFormat=msgpack", lambda: read_live(server, start, end, "msgpack"), _cpu),
        ("live, tupleFormat=variant", lambda: read_live(server, start, end, "variant"), _cpu),
    ]
    for n in connections:
        if n > 1:
            readers.append((f"drain over {n} connections", lambda n=n: round(
                drain_parts(server, parts[n]) * rows_per_byte), _cpu))
        readers.append((f"iter_batches msgpack, connections={n}",
                        lambda n=n: read_parts(server, start, end, "msgpack", n), _cpu))
        if n > 1:
            readers.append((f"iter_batches variant, connections={n}",
                            lambda n=n: read_parts(server, start, end, "variant", n), _cpu))
    if spark is not None:
        for n in connections:
            got = spark_read(spark, server, start, end, n, count=True)
            if got != sum(end.values()) - sum(start.values()):
                raise SystemExit(f"Spark read with connections={n}: {got} rows")
            readers.append((f"Spark local[2] -> noop, connections={n}",
                            lambda n=n: spark_read(spark, server, start, end, n), spark_cpu(spark)))
    # Rounds of every reader in turn, best of `repeat` per reader: a change of the machine's load (it is shared)
    # falls on every reader alike.
    runs: dict[str, list[tuple[int, float, float]]] = {name: [] for name, _, _ in readers}
    for round_ in range(repeat):
        for name, fn, cpu in readers:
            n, seconds, used = timed(fn, cpu)
            runs[name].append((n, seconds, used))
            print(f"{round_} {name:42s} {n:>9d} rows {seconds:7.2f} s {n / seconds:>12,.0f} rows/s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    results = {name: min(m, key=lambda r: r[1]) for name, m in runs.items()}
    pairs_n, pairs_s, pairs_cpu = results["xlog.pairs() (Lua, server files)"]
    drain_n, drain_s, _ = results["drain: relay bytes, not decoded"]
    print()
    print("| reader | rows/s (wall) | × xlog.pairs() (wall) | × drain (wall) | reader CPU s | "
          "× xlog.pairs() (rows per CPU s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (n, seconds, cpu) in results.items():
        print(f"| {name} | {n / seconds:,.0f} | {(n / seconds) / (pairs_n / pairs_s):.2f} | "
              f"{(n / seconds) / (drain_n / drain_s):.2f} | {cpu:.2f} | {(n / cpu) / (pairs_n / pairs_cpu):.2f} |")
    print("(× drain: the one-connection drain; Spark's CPU is the JVM's with its Python workers)")


def latency(server: LiveTarantool, rate: int, seconds: float) -> None:
    total = int(rate * seconds)
    start = server.vclock()
    end = {1: start[1] + total + 1}
    stream = stream_of(server, tupleFormat="msgpack", batchSize=1, readTimeout=30, spaceId=512)
    rs = server.value("box.info.cluster.uuid")
    (slice_,) = stream.plan(make_offset(rs, start), make_offset(rs, end))
    delays: list[float] = []
    server.eval(WRITER_LUA.format(total=total, rate=rate))
    began = time.time()
    for batch in stream.read_slice(slice_):
        now = time.time()
        for ts in batch.column("timestamp").cast("int64").to_pylist():
            delays.append(now - ts / 1e6)
    took = time.time() - began
    delays.sort()

    def pct(p: float) -> float:
        return delays[min(len(delays) - 1, int(p * len(delays)))] * 1000

    print(f"\nlatency: {len(delays)} rows in {took:.2f} s ({len(delays) / took:,.0f} rows/s written and read)")
    print(f"commit-to-row latency: p50 {pct(0.50):.2f} ms, p99 {pct(0.99):.2f} ms, max {delays[-1] * 1000:.2f} ms")


def spark_latency(spark, server: LiveTarantool, workdir: Path, rate: int, seconds: float, warmup: float) -> None:
    """Commit-to-row latency through a Spark query with a 1 s processing-time trigger into ``foreachBatch``."""
    total = int(rate * seconds)
    lock = threading.Lock()
    arrivals: list[tuple[float, float]] = []  # (commit time from the WAL timestamp, arrival in the sink), seconds
    batches: list[tuple[int, int, float]] = []  # (batch id, rows, seconds spent in the sink)
    called = threading.Event()

    def sink(df, batch_id):
        entered = time.time()
        micros = [r[0] for r in df.selectExpr("unix_micros(timestamp)").collect()]
        now = time.time()  # after the collect: the batch's rows have been read from the server and are here
        with lock:
            arrivals.extend((ts / 1e6, now) for ts in micros if ts is not None)
            batches.append((batch_id, len(micros), now - entered))
        called.set()

    options = {k: str(v) for k, v in server.options(tupleFormat="msgpack", spaceId=512, readTimeout=30).items()}
    ck = workdir / "spark-latency-checkpoint"
    q = (spark.readStream.format("tarantool-replication").options(**options).option("startingPosition", "latest")
         .load().writeStream.foreachBatch(sink).option("checkpointLocation", str(ck))
         .trigger(processingTime="1 second").start())
    try:
        # The query resolves "latest" when it starts; a priming row per second until the sink has run once
        # shows the query is up before the measured writer begins.
        for _ in range(120):
            server.eval("box.space.t:replace{1999998, 0}")
            if called.wait(1.0):
                break
        else:
            raise RuntimeError("the Spark query delivered no batch within 120 s")
        with lock:
            arrivals.clear()
            batches.clear()
        began = time.time()
        server.eval(WRITER_LUA.format(total=total, rate=rate))
        deadline = began + seconds + 120
        while time.time() < deadline:  # every row written (and the end marker) delivered, or give up
            with lock:
                got = sum(1 for ts, _ in arrivals if ts >= began)
            if got >= total + 1:
                break
            time.sleep(0.5)
        progress = list(q.recentProgress)
    finally:
        q.stop()
    with lock:
        rows = [(ts, arr) for ts, arr in arrivals if ts >= began]
        seen = list(batches)
    if not rows:
        print("\nSpark latency: no rows arrived")
        return
    first, last = min(ts for ts, _ in rows), max(ts for ts, _ in rows)
    delays = sorted(arr - ts for ts, arr in rows if ts >= first + warmup)
    pct = statistics.quantiles(delays, n=100) if len(delays) > 1 else delays * 99
    durations = [p.durationMs.get("triggerExecution", 0) / 1000 for p in progress if p.numInputRows]
    per_batch = [n for _, n, _ in seen if n]
    print(f"\nSpark (local[2], processingTime 1 s, foreachBatch): {len(rows)} of {total + 1} rows arrived, "
          f"written at {len(rows) / max(last - first, 1e-9):,.0f} rows/s over {last - first:.1f} s; "
          f"{len(per_batch)} non-empty micro-batches, rows per batch median {statistics.median(per_batch):,.0f} "
          f"max {max(per_batch):,}; trigger execution median "
          f"{statistics.median(durations) if durations else float('nan'):.2f} s max "
          f"{max(durations) if durations else float('nan'):.2f} s (last {len(progress)} progress reports)")
    print(f"commit-to-row latency after {warmup:g} s warm-up ({len(delays)} rows): p50 {pct[49] * 1000:.0f} ms, "
          f"p99 {pct[98] * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms; floor p99 < 3 s "
          f"{'met' if pct[98] < 3.0 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="writer duration of both latency parts")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of the Spark part's writer not counted")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark latency part")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per reader")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--connections", default="1,2,4,8", help="the numbers of connections to read the backlog over")
    parser.add_argument("--no-latency", action="store_true", help="skip both latency parts")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-live-"))
    spark = None if args.no_spark else spark_session()
    server = LiveTarantool(workdir / "srv", replication_timeout=1.0)
    server.start()
    try:
        if args.rows > 0:
            backlog(server, workdir, args.rows, args.repeat, [int(n) for n in args.connections.split(",")], spark)
        if args.no_latency:
            return
        latency(server, args.rate, args.seconds)
        if spark is not None:
            spark_latency(spark, server, workdir, args.rate, args.seconds, args.warmup)
    finally:
        server.stop()
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
