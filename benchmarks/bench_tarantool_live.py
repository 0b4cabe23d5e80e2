"""Live Tarantool replication (``tarantool-replication``): backlog throughput and commit-to-row latency.

Starts a real tarantool on loopback (``tests/support/servers/tarantool_live.py``), then:

1. **Backlog**: writes ``--rows`` rows (default 1M, 1000-row transactions), reads the whole vclock range as an
   anonymous replica through ``LiveStream.plan`` / ``read_slice`` (``tupleFormat`` msgpack and variant), and
   reads the same rows from the server's own xlog files with Tarantool's ``xlog.pairs()`` (a Lua loop touching
   every row's header and body). Prints rows/s (best of ``--repeat`` runs each: the machine may be shared) and
   the ratio to xlog.pairs() (the floor is 0.5×), by wall time and by the reader's own CPU time (the live wall
   time also waits for the server's relay, which writes one row per syscall, and for the scheduler).
2. **Latency**: a Lua fiber commits ``--rate`` single-row transactions per second (default 10 000) for
   ``--seconds``; the reader (``batchSize=1``: every network read is handed over at once) records, per row,
   arrival time minus the row's WAL timestamp. Prints p50 / p99 / max and the rate actually written.

Usage: python3 benchmarks/bench_tarantool_live.py [--rows 1000000] [--rate 10000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from spark_logsource.registry import format_class  # noqa: E402
from spark_logsource.tarantool.live import make_offset  # noqa: E402
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


def timed(fn) -> tuple[int, float, float]:
    """(rows, wall seconds, CPU seconds of the reader: this process or the xlog.pairs() child, not the server)."""
    began, cpu = time.perf_counter(), _cpu()
    n = fn()
    return n, time.perf_counter() - began, _cpu() - cpu


def backlog(server: LiveTarantool, workdir: Path, rows: int, repeat: int) -> None:
    start = server.vclock()
    began = time.perf_counter()
    server.eval(BACKLOG_LUA.format(rows=rows), timeout=600)
    end = server.vclock()
    print(f"wrote {rows} rows in {time.perf_counter() - began:.1f} s; vclock {start} -> {end}")
    results = {}
    for name, fn in [
        ("xlog.pairs() (Lua, server files)", lambda: pairs_rows(server, workdir)),
        ("live, tupleFormat=msgpack", lambda: read_live(server, start, end, "msgpack")),
        ("live, tupleFormat=variant", lambda: read_live(server, start, end, "variant")),
    ]:
        n, seconds, cpu = min((timed(fn) for _ in range(repeat)), key=lambda m: m[1])  # best of `repeat`
        results[name] = (n, seconds, cpu)
        print(f"{name:36s} {n:>9d} rows {seconds:7.2f} s {n / seconds:>12,.0f} rows/s")
    pairs_n, pairs_s, pairs_cpu = results["xlog.pairs() (Lua, server files)"]
    print()
    print("| reader | rows/s (wall) | × xlog.pairs() (wall) | reader CPU s | × xlog.pairs() (rows per CPU s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (n, seconds, cpu) in results.items():
        print(f"| {name} | {n / seconds:,.0f} | {(n / seconds) / (pairs_n / pairs_s):.2f} | {cpu:.2f} | "
              f"{(n / cpu) / (pairs_n / pairs_cpu):.2f} |")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per reader")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-live-"))
    server = LiveTarantool(workdir / "srv", replication_timeout=1.0)
    server.start()
    try:
        backlog(server, workdir, args.rows, args.repeat)
        latency(server, args.rate, args.seconds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
