"""Rows/s of the Tarantool row decoders: the C kernel vs the pure-Python reference, per tuple format.

Makes (or reuses) a 1M-row xlog written by the real tarantool (``replace{i, 'name'..i, i*2, {a=i}}`` from
concurrent fibers, single-statement rows, zstd blocks), decompresses every block once, then times, over all
payloads: the C column builder (``_kernel.ColumnBuilder``: Arrow buffers, a batch taken every 8192 rows, as the
reader does), the kernel's ``decode_payload`` (Python lists), and the pure-Python reference builder.  Also times
Tarantool's own ``xlog.pairs()`` (a Lua loop touching each row) on the same file for reference.  Times are CPU
seconds of this process (``time.process_time``), so a busy machine disturbs them less than wall time.

    python3 benchmarks/bench_kernel.py [--rows 1000000] [--dir /tmp/bench_kernel] [--repeat 3] [--skip-python]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_logsource.tarantool.decode import columns
from spark_logsource.tarantool.xlog.blocks import Block, BlockScanner
from spark_logsource.tarantool.xlog.meta import read_meta

log = logging.getLogger("bench_kernel")

WORKLOAD = textwrap.dedent(
    """
    local fiber = require('fiber')
    local n = tonumber(os.getenv('ROWS'))
    box.cfg{work_dir = os.getenv('WORK_DIR'), log = 'tarantool.log', wal_mode = 'write',
            checkpoint_interval = 0, memtx_memory = 2 * 1024 * 1024 * 1024}
    local s = box.schema.space.create('bench', {if_not_exists = true})
    s:create_index('pk', {if_not_exists = true})
    local fibers = 64
    local done = fiber.channel(fibers)
    for f = 1, fibers do
      fiber.create(function()
        for i = f, n, fibers do s:replace{i, 'name' .. i, i * 2, {a = i}} end
        done:put(true)
      end)
    end
    for _ = 1, fibers do done:get() end
    os.exit(0)
    """
)

PAIRS = textwrap.dedent(
    """
    local xlog = require('xlog')
    local count = 0
    for _, row in xlog.pairs(arg[1]) do
      if row.HEADER.lsn ~= nil and row.BODY ~= nil then count = count + 1 end
    end
    print(count, os.clock())
    os.exit(0)
    """
)


def make_xlog(work: Path, n_rows: int) -> Path:
    """The largest xlog in ``work`` after running the workload there (reused when already made)."""
    xlogs = sorted(work.glob("*.xlog"), key=lambda p: p.stat().st_size)
    if xlogs and (work / f"done-{n_rows}").exists():
        return xlogs[-1]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "workload.lua").write_text(WORKLOAD)
    started = time.perf_counter()
    subprocess.run(
        ["tarantool", "workload.lua"],
        cwd=work,
        check=True,
        env={**os.environ, "WORK_DIR": str(work), "ROWS": str(n_rows)},
    )
    log.info("tarantool wrote %d rows in %.1f s", n_rows, time.perf_counter() - started)
    (work / f"done-{n_rows}").touch()
    return sorted(work.glob("*.xlog"), key=lambda p: p.stat().st_size)[-1]


def load_payloads(path: Path) -> list[tuple[int, bytes]]:
    with open(path, "rb") as source:
        meta = read_meta(source, str(path))
        return [
            (b.offset, b.payload)
            for b in BlockScanner(source, str(path), data_offset=meta.data_offset)
            if isinstance(b, Block)
        ]


def time_decoder(decode, payloads: list[tuple[int, bytes]], fmt: str, path: str, repeat: int) -> tuple[int, float]:
    best = float("inf")
    n = 0
    for _ in range(repeat):
        started = time.process_time()
        n = 0
        for offset, payload in payloads:
            n += len(decode(payload, fmt, path, offset)["lsn"])
        best = min(best, time.process_time() - started)
    return n, best


def time_builder(make, payloads: list[tuple[int, bytes]], path: str, repeat: int,
                 batch: int = 8192) -> tuple[int, float]:
    """CPU seconds of a column builder over every payload, a batch of Arrow arrays taken every ``batch`` rows."""
    best = float("inf")
    n = 0
    for _ in range(repeat):
        started = time.process_time()
        builder, n = make(), 0
        for offset, payload in payloads:
            builder.add_payload(payload, path, offset)
            while builder.rows >= batch:
                n += len(builder.take(batch, 1 << 28)["lsn"])
        n += len(builder.take(batch, 1 << 28)["lsn"])
        best = min(best, time.process_time() - started)
    return n, best


def time_xlog_pairs(path: Path) -> tuple[int, float]:
    script = path.parent / "pairs.lua"
    script.write_text(PAIRS)
    out = subprocess.run(["tarantool", str(script), str(path)], capture_output=True, text=True, check=True).stdout
    count, seconds = out.split()
    return int(count), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench_kernel"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-python", action="store_true", help="time only the C kernel")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from spark_logsource.tarantool import _kernel
    from spark_logsource.tarantool._kernel import decode_payload as c_decode

    path = make_xlog(args.dir, args.rows)
    payloads = load_payloads(path)
    raw = sum(len(p) for _, p in payloads)
    log.info("%s: %d blocks, %.1f MB decompressed", path, len(payloads), raw / 1e6)

    n_pairs, t_pairs = time_xlog_pairs(path)
    log.info("xlog.pairs()        %10d rows  %7.3f s  %12.0f rows/s", n_pairs, t_pairs, n_pairs / t_pairs)
    for fmt in ("msgpack", "variant", "json"):
        n_c, t_c = time_builder(lambda f=fmt: columns.KernelColumnBuilder(f, _kernel), payloads, str(path), args.repeat)
        line = f"{fmt:8s} C columns  {n_c:10d} rows  {t_c:7.3f} s  {n_c / t_c:12.0f} rows/s"
        line += f"  ({n_c / t_c / (n_pairs / t_pairs):.2f}x xlog.pairs)"
        n_l, t_l = time_decoder(c_decode, payloads, fmt, str(path), args.repeat)
        assert n_l == n_c
        line += f" | C lists {n_l / t_l:10.0f} rows/s"
        if not args.skip_python:
            n_py, t_py = time_builder(lambda f=fmt: columns.PyColumnBuilder(f), payloads, str(path), 1)
            assert n_py == n_c
            line += f" | Python columns {n_py / t_py:10.0f} rows/s  C/Python {t_py / t_c:5.1f}x"
        log.info("%s", line)


if __name__ == "__main__":
    main()
