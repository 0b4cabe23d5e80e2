"""Benchmark: rows/s of the compiled row kernel against the pure-Python path, on a real MariaDB binlog.

The binlog is the one ``benchmarks/bench_mysql.py`` makes on a real MariaDB 10.11 (≥ 500 000 row changes of an
8-column table: INT, BIGINT, SMALLINT, VARCHAR, DECIMAL, DATETIME, TEXT, TINYINT UNSIGNED; FULL metadata),
cached in ``/tmp/spark-logsource-bench/mysql``; it is made there first (by ``bench_mysql.prepare``) when missing.
All rows events are read into memory first (framing, CRC and TABLE_MAP decoding are not timed), then each
variant is timed over all of them:

* ``encode_rows_event_c`` (the kernel) and ``encode_rows_event_py`` (``parse_rows_event`` + ``encode_variant`` /
  ``to_json`` per row), for ``row_format`` variant and json;
* ``parse_rows_event`` alone (Python values, no encoding), for scale;
* ``mariadb-binlog -v --base64-output=decode-rows FILE > /dev/null`` (the server's own reader), for scale.

    python3 benchmarks/bench_mysql_kernel.py [--workdir /tmp/spark-logsource-bench/mysql] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile  # noqa: E402
from spark_logsource.mysql.decode.rows import parse_rows_event  # noqa: E402
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map  # noqa: E402
from spark_logsource.mysql.encode.images import KERNEL_AVAILABLE, encode_rows_event_c, encode_rows_event_py  # noqa: E402

log = logging.getLogger("bench_mysql_kernel")

ROWS_TYPES = frozenset({23, 24, 25, 30, 31, 32, 166, 167, 168, 169, 170, 171})
DEFAULT_WORKDIR = Path("/tmp/spark-logsource-bench/mysql")
ROWS = 500_000


def binlog_path(workdir: Path) -> Path:
    """The cached benchmark binlog; made by bench_mysql.prepare (real MariaDB) when it is not there yet."""
    marker = workdir / "workload.json"
    if marker.exists():
        path = workdir / "server" / "binlog" / json.loads(marker.read_text())["binlog"]
        if path.exists():
            return path
    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_mysql  # the benchmark folder's own workload maker

    server, workload = bench_mysql.prepare(workdir, ROWS)
    try:
        return server.binlog_dir / workload.binlog
    finally:
        server.stop()


def load_events(path: Path) -> list[tuple]:
    """(type, body, post_header_len, table_id_size, table_maps, path, pos) of every rows event."""
    out = []
    with path.open("rb") as stream, BinlogFile(stream, str(path)) as binlog:
        table_id_size = 4 if binlog.fde.post_header_len(19, 8) == 6 else 6
        maps: dict[int, TableMap] = {}
        for ev in binlog.events():
            if not isinstance(ev, BinlogEvent):
                raise RuntimeError(f"framing error in the benchmark binlog: {ev}")
            if ev.type_code == 19:
                table_map = parse_table_map(ev.body, table_id_size=table_id_size)
                maps = {table_map.table_id: table_map}
            elif ev.type_code in ROWS_TYPES:
                out.append((ev.type_code, ev.body, binlog.fde.post_header_len(ev.type_code, 10), table_id_size,
                            maps, str(path), ev.pos))
    return out


def run_encoder(encode: Callable, events: list[tuple], row_format: str) -> int:
    rows = 0
    for type_code, body, phl, tis, maps, path, pos in events:
        rows += encode(type_code, body, post_header_len=phl, table_id_size=tis, table_maps=maps, path=path,
                       offset=pos, row_format=row_format).n
    return rows


def run_decoder(events: list[tuple]) -> int:
    rows = 0
    for type_code, body, phl, tis, maps, _path, _pos in events:
        rows += len(parse_rows_event(type_code, body, post_header_len=phl, table_id_size=tis, table_maps=maps).rows)
    return rows


def best_of(repeat: int, action: Callable[[], int]) -> tuple[float, int]:
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        started = time.perf_counter()
        rows = action()
        best = min(best, time.perf_counter() - started)
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the kernel (best is kept)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not KERNEL_AVAILABLE:
        raise SystemExit("the kernel is not built: python3 setup.py build_ext --inplace")
    path = binlog_path(args.workdir)
    events = load_events(path)
    log.info("%s: %d rows events, %.1f MB", path, len(events), path.stat().st_size / 1e6)

    results: list[tuple[str, float, int]] = []
    for row_format in ("variant", "json"):
        seconds, rows = best_of(args.repeat, lambda f=row_format: run_encoder(encode_rows_event_c, events, f))
        results.append((f"kernel, {row_format}", seconds, rows))
        seconds, rows = best_of(1, lambda f=row_format: run_encoder(encode_rows_event_py, events, f))
        results.append((f"python, {row_format}", seconds, rows))
    seconds, rows = best_of(1, lambda: run_decoder(events))
    results.append(("python parse_rows_event only (no encoding)", seconds, rows))
    started = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        subprocess.run(["mariadb-binlog", "-v", "--base64-output=decode-rows", str(path)], stdout=devnull, check=True)
    results.append(("mariadb-binlog -v --base64-output=decode-rows", time.perf_counter() - started, rows))

    print(f"\n{rows} row changes, {len(events)} rows events\n")
    print("| reader | seconds | rows/s |")
    print("|---|---:|---:|")
    rates = {}
    for label, seconds, count in results:
        rates[label] = count / seconds
        print(f"| {label} | {seconds:.2f} | {count / seconds:,.0f} |")
    mariadb = rates["mariadb-binlog -v --base64-output=decode-rows"]
    for row_format in ("variant", "json"):
        kernel, python = rates[f"kernel, {row_format}"], rates[f"python, {row_format}"]
        print(f"\n{row_format}: kernel / python = {kernel / python:.1f}x, kernel / mariadb-binlog = "
              f"{kernel / mariadb:.2f}x, python / mariadb-binlog = {python / mariadb:.2f}x")


if __name__ == "__main__":
    main()
