"""``spark-logsource cat``: print the records of log files (or of a live server's dump) without Spark."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from spark_logsource.cli.formats import add_format_flags, pick_format, reader_options
from spark_logsource.cli.output import BATCH_FORMATS, json_columns, write_batch
from spark_logsource.registry import format_names

#: Inputs at least this big get a progress bar on a terminal (``--progress auto``).
PROGRESS_MIN_BYTES = 32 << 20


def add_parser(sub: Any) -> argparse.ArgumentParser:
    cat = sub.add_parser("cat", help="print records as JSON lines or YAML documents, without Spark")
    cat.add_argument("paths", nargs="+", metavar="FILE|DIR")
    cat.add_argument("--source", choices=format_names(), metavar="FORMAT",
                     help=f"format (default: detected): {', '.join(format_names())}")
    cat.add_argument("--format", choices=BATCH_FORMATS, default="json")
    cat.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                     help="progress bar on stderr (auto: for inputs over 32 MiB on a terminal)")
    cat.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="any reader option")
    cat.set_defaults(run=run, format_flags=add_format_flags(cat, "cat"))
    return cat


def run(args: argparse.Namespace) -> int:
    cls = pick_format(args.source, args.paths, "cat")
    source = cls(reader_options(cls, args.paths, args, args.format_flags, "cat"))
    json_cols = json_columns(cls, source.schema())
    files = source.list_files()
    splits = source.plan(files)
    bar = _progress(sum(f.size for f in files), args.progress)
    out = sys.stdout
    try:
        for split in splits:
            for batch in source.read_split(split):
                write_batch(out, batch, args.format, json_cols)
            if bar is not None:
                bar.update((split.end if split.end is not None else split.file_size) - split.start)
    except BrokenPipeError:  # `spark-logsource cat ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if bar is not None:
            bar.close()
    return 0


def _progress(total: int, mode: str) -> Any:
    show = mode == "always" or (mode == "auto" and total >= PROGRESS_MIN_BYTES and sys.stderr.isatty())
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, desc="reading")
