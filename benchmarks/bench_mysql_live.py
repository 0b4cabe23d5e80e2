"""Benchmark: the live MySQL/MariaDB source (``mysql-replication``) on a real MariaDB 10.11 over loopback TCP.

1. Throughput on a backlog of ≥ 500 000 row changes (``binlog_format=ROW``, ``binlog_row_metadata=FULL``;
   multi-row INSERT transactions, then UPDATEs and DELETEs), read from the server's replication protocol by:

   * ``spark_logsource.iter_batches("mysql-replication", ...)`` (``startingPosition`` / ``endingPosition`` = the
     backlog), in this process;
   * ``mariadb-binlog --read-from-remote-server -v --base64-output=decode-rows`` (the server's own C++ client,
     output to /dev/null; it checks no CRC32 unless asked, ours does by default); floors: ours ≥ 0.5× its rows/s
     (issue #8), ≥ 1.0× (issue #26);
   * python-mysql-replication (``BinLogStreamReader``, ``blocking=False``, rows events, counting rows); floor: ≥ 10×;
   * the drain, a limit: the same ``COM_BINLOG_DUMP`` (from the backlog's first binlog to the server's end) read
     from the socket into big buffers and thrown away, only the packet headers framed to find the dump's end:
     what the server and the network give, with no decoding at all.

   Each reader runs ``--repeat`` times, side by side; the table gives the median of each, wall and CPU (this
   process and its children: the CPU ratio moves less than the wall one on a loaded machine).

2. Latency under a writer of ``--rate`` rows/s (transactions of 50 rows, each row stamped with the client's clock)
   while a follower polls every ``--trigger`` seconds (what a 1 s Spark trigger does: latest offset, plan, read):
   p50 / p99 of (row seen by the follower − row written); floor: p99 < 3 s.

The server's datadir is kept under ``--workdir`` and reused (the backlog is made once).

    python3 benchmarks/bench_mysql_live.py [--workdir /tmp/spark-logsource-bench-live] [--rows 500000] [--repeat 3]
        [--skip-pmr] [--no-query]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.servers.mariadb import MariaDBServer  # noqa: E402  (needs the repository root on sys.path)

log = logging.getLogger("bench_mysql_live")

USER, PASSWORD = "bench", "bench-pw"
BACKLOG_VERSION = 1


def open_server(workdir: Path) -> MariaDBServer:
    server = MariaDBServer(workdir / "server")
    server.start()
    server.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
    server.execute(f"CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'")
    # python-mysql-replication also reads information_schema; ours needs only REPLICATION SLAVE, BINLOG MONITOR
    server.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'127.0.0.1'")
    server.set_global("binlog_row_metadata", "FULL")
    return server


def make_backlog(server: MariaDBServer, rows: int) -> dict[str, Any]:
    server.execute("CREATE DATABASE IF NOT EXISTS bench")
    server.execute("CREATE TABLE IF NOT EXISTS bench.orders (id INT PRIMARY KEY AUTO_INCREMENT, customer BIGINT, "
                   "sku VARCHAR(32), amount DECIMAL(12,2), at DATETIME(3), note TEXT, qty SMALLINT)")
    server.flush_logs()
    first = server.binlog_files()[-1].name
    inserted = 0
    while inserted < rows * 0.9:  # with the updates and deletes: a little over ``rows`` changes
        server.execute("BEGIN")
        for _ in range(10):
            values = ", ".join(f"({n % 5003}, 'SKU-{n:08d}', {n % 100000 / 100:.2f}, '2024-05-01 12:00:00.123', "
                               f"'note {n}', {n % 7})" for n in range(inserted, inserted + 1000))
            server.execute(f"INSERT INTO bench.orders (customer, sku, amount, at, note, qty) VALUES {values}")
            inserted += 1000
        server.execute("COMMIT")
    updated = server.execute("UPDATE bench.orders SET qty = qty + 1 WHERE id % 7 = 0")
    deleted = server.execute("DELETE FROM bench.orders WHERE id % 13 = 0")
    server.flush_logs()
    last_file, last_pos = server.query("SHOW MASTER STATUS")[0][:2]
    return {"version": BACKLOG_VERSION, "first": first, "end_file": last_file, "end_pos": int(last_pos),
            "rows": inserted + updated + deleted}


def ours(server: MariaDBServer, backlog: dict[str, Any], **extra: str) -> int:
    import spark_logsource

    options = {**extra, "uri": f"mysql://{USER}@127.0.0.1:{server.port}", "password": PASSWORD, "serverId": "7100",
               "startingPosition": json.dumps({"file": backlog["first"], "pos": 4}),
               "endingPosition": json.dumps({"file": backlog["end_file"], "pos": backlog["end_pos"]})}
    return sum(b.num_rows for b in spark_logsource.iter_batches("mysql-replication", [], **options))


def backlog_files(server: MariaDBServer, backlog: dict[str, Any]) -> list[str]:
    """The binlogs holding the backlog (it ends where ``end_file`` starts: the backlog was flushed)."""
    names = [str(row[0]) for row in server.query("SHOW BINARY LOGS")]
    return names[names.index(backlog["first"]):names.index(backlog["end_file"])]


def mariadb_binlog(server: MariaDBServer, backlog: dict[str, Any]) -> int:
    with open(os.devnull, "wb") as devnull:
        subprocess.run(["mariadb-binlog", "--read-from-remote-server", "--host=127.0.0.1", f"--port={server.port}",
                        f"--user={USER}", f"--password={PASSWORD}", "-v", "--base64-output=decode-rows",
                        *backlog_files(server, backlog)], stdout=devnull, check=True)
    return -1


def drain(server: MariaDBServer, backlog: dict[str, Any]) -> int:
    """The dump's bytes read and thrown away (the limit; see the module docstring); the bytes read."""
    from spark_logsource.mysql.stream.client import COM_BINLOG_DUMP, ReplicationClient, parse_uri
    from spark_logsource.mysql.stream.packets import PacketFramer

    settings = parse_uri(f"mysql://{USER}@127.0.0.1:{server.port}", PASSWORD)
    total = 0
    with ReplicationClient(settings) as client:
        client._prepare_dump(7150)
        client._command(COM_BINLOG_DUMP, struct.pack("<IHI", 4, client._dump_flags(), 7150) + backlog["first"].encode())
        rfile = client._conn._rfile
        framer = PacketFramer()
        while not framer.done:
            n = rfile.readinto1(framer.room())
            if not n:
                raise SystemExit("the server closed the dump before its end")
            framer.feed(n)
            total += n
    return total


def python_mysql_replication(server: MariaDBServer, backlog: dict[str, Any]) -> int:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    stream = BinLogStreamReader(connection_settings={"host": "127.0.0.1", "port": server.port, "user": USER,
                                                     "passwd": PASSWORD},
                                server_id=7200, blocking=False, log_file=backlog["first"], log_pos=4,
                                resume_stream=True, enable_logging=False,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    n = 0
    try:
        for event in stream:
            if stream.log_file == backlog["end_file"]:
                break  # past the backlog (the latency runs append to later files)
            n += len(event.rows)
    finally:
        stream.close()
    return n


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (mariadb-binlog runs as one)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(action: Any, *args: Any) -> tuple[float, int]:
    started = time.perf_counter()
    n = action(*args)
    return time.perf_counter() - started, n


def timed_cpu(results: dict[str, list[tuple[float, float]]], label: str, action: Any, *args: Any) -> int:
    """Run ``action``, add its (wall, CPU) seconds to ``results[label]``; what it returned."""
    cpu = cpu_seconds()
    wall, n = timed(action, *args)
    results.setdefault(label, []).append((wall, cpu_seconds() - cpu))
    return n


def latency(server: MariaDBServer, rate: int, seconds: float, trigger: float) -> list[float]:
    """Seconds from each row's commit (client clock) to the follower's read of it."""
    import pymysql

    from spark_logsource.api import make_format

    server.execute("CREATE TABLE IF NOT EXISTS bench.ticks (id INT PRIMARY KEY AUTO_INCREMENT, t DOUBLE)")
    stream = make_format("mysql-replication", [], {"uri": f"mysql://{USER}@127.0.0.1:{server.port}",
                                                   "password": PASSWORD, "serverId": "7300",
                                                   "startingPosition": "latest", "tables": "bench.ticks",
                                                   "rowFormat": "json"}).stream()
    start = stream.initial_offset()
    stop = threading.Event()

    def write() -> None:
        conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", autocommit=True)
        per_tx = 50
        interval = per_tx / rate
        next_at = time.monotonic()
        with conn.cursor() as cur:
            while not stop.is_set():
                now = time.time()
                cur.execute("INSERT INTO bench.ticks (t) VALUES " + ", ".join(["(%s)"] * per_tx), [now] * per_tx)
                next_at += interval
                time.sleep(max(0.0, next_at - time.monotonic()))
        conn.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    delays: list[float] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            tick = time.monotonic()
            end = stream.latest_offset(start, stream.default_budget())
            for slice_ in stream.plan(start, end):
                for batch in stream.read_slice(slice_):
                    seen = time.time()
                    delays.extend(seen - json.loads(a)["t"] for a in batch.column("after").to_pylist())
            start = end
            time.sleep(max(0.0, trigger - (time.monotonic() - tick)))
    finally:
        stop.set()
        writer.join()
    return delays


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spark-logsource-bench-live"))
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rate", type=int, default=5000, help="rows/s of the latency writer")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the latency run")
    parser.add_argument("--trigger", type=float, default=1.0, help="follower poll interval (the trigger)")
    parser.add_argument("--skip-pmr", action="store_true", help="skip python-mysql-replication (slow)")
    parser.add_argument("--no-query", action="store_true", help="skip the includeQuery=true read (slow)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each reader (the median is shown)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args.workdir.mkdir(parents=True, exist_ok=True)
    server = open_server(args.workdir)
    try:
        marker = args.workdir / "backlog.json"
        backlog = json.loads(marker.read_text()) if marker.exists() else None
        if backlog is None or backlog.get("version") != BACKLOG_VERSION or backlog["rows"] < args.rows:
            backlog = make_backlog(server, args.rows)
            marker.write_text(json.dumps(backlog))
        n = backlog["rows"]
        results: dict[str, list[tuple[float, float]]] = {}
        ours(server, backlog, includeQuery="false")  # warm-up: imports, the C kernel, the server's page cache
        # includeQuery=false: mariadb-binlog prints each statement once; ours would repeat a 1000-row INSERT's
        # text (~100 KB) on each of its 1000 rows (the default, timed too, for the record)
        main_label = "spark-logsource mysql-replication (iter_batches, includeQuery=false, CRC32 checked)"
        for _ in range(args.repeat):
            got = timed_cpu(results, main_label, lambda: ours(server, backlog, includeQuery="false"))
            if got != n:
                raise SystemExit(f"mysql-replication read {got} rows, the backlog has {n}")
            # mariadb-binlog does not check CRC32s unless asked (--verify-binlog-checksum); ours does by default
            timed_cpu(results, "spark-logsource mysql-replication (includeQuery=false, verifyChecksums=false)",
                      lambda: ours(server, backlog, includeQuery="false", verifyChecksums="false"))
            timed_cpu(results, "mariadb-binlog --read-from-remote-server -v", mariadb_binlog, server, backlog)
            timed_cpu(results, "drain: the same dump's bytes read and thrown away (a limit)", drain, server, backlog)
        if not args.no_query:
            timed_cpu(results, "spark-logsource mysql-replication (iter_batches, includeQuery=true)",
                      lambda: ours(server, backlog, includeQuery="true"))
        if not args.skip_pmr:
            got = timed_cpu(results, "python-mysql-replication BinLogStreamReader", python_mysql_replication, server,
                            backlog)
            if got != n:
                log.warning("python-mysql-replication counted %d rows of %d", got, n)
        delays = sorted(latency(server, args.rate, args.seconds, args.trigger))
    finally:
        server.stop()
    medians = {label: (statistics.median(w for w, _c in runs), statistics.median(c for _w, c in runs))
               for label, runs in results.items()}
    ours_wall, ours_cpu = medians[main_label]
    print(f"\nBacklog: {n:,} row changes, MariaDB 10.11 over loopback TCP; median of {args.repeat} runs "
          "(CPU: this process's and its children's, not the server's)\n")
    print("| reader | wall s (each run) | CPU s | rows/s | ours ÷ it, wall | ours ÷ it, CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, (wall, cpu) in medians.items():
        runs = ", ".join(f"{w:.2f}" for w, _c in results[label])
        print(f"| {label} | {wall:.2f} ({runs}) | {cpu:.2f} | {n / wall:,.0f} | {wall / ours_wall:.2f}× "
              f"| {cpu / ours_cpu:.2f}× |")
    if delays:
        p50 = statistics.median(delays)
        p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
        print(f"\nLatency ({len(delays):,} rows at {args.rate} rows/s, {args.trigger:g} s trigger): "
              f"p50 {p50:.3f} s, p99 {p99:.3f} s (floor: p99 < 3 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
