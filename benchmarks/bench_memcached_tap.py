"""memcached-tap speed: a replayed DUMP over loopback, and decoding a capture file.

The DUMP is made of real server bytes: the TAP_MUTATION packets two recordings hold, repeated to ``--items``
packets (default 1M):

- ``mixed``: the 300 items engine-pu sent in ``engine-pu-binary_keys_300`` (keys of 1–250 bytes, some not UTF-8,
  values up to a few hundred bytes);
- ``small``: the 7 items Couchbase 1.8.1 sent in ``couchbase-1.8.1-dump`` (short keys and values).

For each, a server in a child process answers a TAP_CONNECT DUMP with the whole stream and closes. Printed:

- drain: a client that reads the same bytes from the socket without decoding (recv_into until EOF);
- decode: ``spark_logsource.iter_batches("memcached-tap", [], uri=...)`` (client, framing, Arrow rows);
- the ratio decode rows/s ÷ drain "rows"/s (issue floor 0.3×): of the best times, and the median of the ratios
  taken within each repetition (drain and decode run back to back, so both see the same load);
- CPU seconds of this process (all its threads) per drain and per decode, medians: steadier than wall-clock rates
  on a shared machine;
- capture: ``iter_batches`` over the same bytes written to a ``.tap`` file, in MB/s and rows/s.

Usage: python3 benchmarks/bench_memcached_tap.py [--items 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CONVERSATIONS = REPO / "tests" / "fixtures" / "memcached-tap" / "conversations"
SETS = {"mixed": "engine-pu-binary_keys_300.jsonl", "small": "couchbase-1.8.1-dump.jsonl"}


def recorded_mutations(name: str) -> list[bytes]:
    out = []
    for line in (CONVERSATIONS / name).read_text().splitlines()[1:]:
        event = json.loads(line)
        if event.get("dir") == "s2c":
            packet = bytes.fromhex(event["hex"])
            if packet[1] == 0x41:
                out.append(packet)
    return out


def make_stream(name: str, items: int) -> bytes:
    packets = recorded_mutations(name)
    reps, rest = divmod(items, len(packets))
    return b"".join(packets) * reps + b"".join(packets[:rest])


def serve(data: bytes, ready: mp.Queue, connections: int) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ready.put(listener.getsockname()[1])
        for _ in range(connections):
            conn, _ = listener.accept()
            with conn:
                head = conn.recv(24, socket.MSG_WAITALL)
                body = int.from_bytes(head[8:12], "big")
                if body:
                    conn.recv(body, socket.MSG_WAITALL)
                conn.sendall(data)
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):  # until the client closes
                    pass


def drain(port: int, connect: bytes) -> int:
    buf = bytearray(1 << 20)
    total = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(connect)
        while True:
            n = sock.recv_into(buf)
            if not n:
                return total
            total += n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import spark_logsource
    from spark_logsource.memcached.client import ConnectSpec

    connect = ConnectSpec(name=b"bench", dump=True, support_ack=False).encode()
    print("| data | items | MB | drain MB/s | decode rows/s | decode ÷ drain (best) | decode ÷ drain (median; each "
          "repetition) | CPU s drain / decode | capture MB/s | capture rows/s |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for label, name in SETS.items():
        data = make_stream(name, args.items)
        ready: mp.Queue = mp.Queue()
        server = mp.Process(target=serve, args=(data, ready, 2 * args.repeat), daemon=True)
        server.start()
        port = ready.get(timeout=30)
        drain_s = decode_s = float("inf")
        rows = 0
        ratios, drain_cpu, decode_cpu = [], [], []
        for _ in range(args.repeat):
            began, cpu = time.perf_counter(), time.process_time()
            got = drain(port, connect)
            drain_t = time.perf_counter() - began
            drain_cpu.append(time.process_time() - cpu)
            assert got == len(data), (got, len(data))
            began, cpu = time.perf_counter(), time.process_time()
            rows = sum(len(b) for b in spark_logsource.iter_batches("memcached-tap", [], uri=f"tap://127.0.0.1:{port}",
                                                                     name="bench", ack=False))
            decode_t = time.perf_counter() - began
            decode_cpu.append(time.process_time() - cpu)
            assert rows == args.items, rows
            drain_s, decode_s = min(drain_s, drain_t), min(decode_s, decode_t)
            ratios.append(drain_t / decode_t)  # decode rows/s ÷ drain rows/s, same rows
        server.join(30)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "dump.tap"
            path.write_bytes(data)
            capture_s = float("inf")
            for _ in range(args.repeat):
                began = time.perf_counter()
                n = sum(len(b) for b in spark_logsource.iter_batches("memcached-tap", str(path)))
                capture_s = min(capture_s, time.perf_counter() - began)
                assert n == args.items
        mb = len(data) / 1e6
        drain_rows = args.items / drain_s
        decode_rows = rows / decode_s
        each = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"| {label} | {args.items:,} | {mb:.0f} | {mb / drain_s:,.0f} | {decode_rows:,.0f} | "
              f"{decode_rows / drain_rows:.2f}× | {statistics.median(ratios):.2f}× ({each}) | "
              f"{statistics.median(drain_cpu):.3f} / {statistics.median(decode_cpu):.3f} | {mb / capture_s:,.0f} | "
              f"{args.items / capture_s:,.0f} |")


if __name__ == "__main__":
    main()
