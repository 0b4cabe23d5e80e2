"""``spark-logsource cat``: print the records of log files (or of a live server's dump) without Spark.

Bad data is reported as ``mysqlbinlog`` reports it: the good records are printed, each bad region (a block,
event or file that cannot be decoded) is one line on stderr naming the file, the byte offset and the reason, and
the exit status is 1. A ``--mode`` (or ``--option mode=...``) given by the user is obeyed instead: PERMISSIVE
prints the corrupt-record rows with the good ones, DROPMALFORMED skips them, FAILFAST stops at the first.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.cli.formats import add_format_flags, add_password_flags, pick_format, reader_options
from spark_logsource.cli.output import BATCH_FORMATS, json_columns, require_output_format, write_batch
from spark_logsource.io.fs import display_name
from spark_logsource.options import ParseMode
from spark_logsource.registry import format_names

log = logging.getLogger(__name__)

#: Inputs at least this big get a progress bar on a terminal (``--progress auto``).
PROGRESS_MIN_BYTES = 32 << 20


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    cat = sub.add_parser("cat", help="print records as JSON lines or YAML documents, without Spark")
    cat.add_argument("paths", nargs="+", metavar="FILE|DIR")
    cat.add_argument("--source", choices=format_names(), metavar="FORMAT",
                     help=f"format (default: detected): {', '.join(format_names())}")
    cat.add_argument("--format", choices=BATCH_FORMATS, default="json")
    cat.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                     help="progress bar on stderr (auto: for inputs over 32 MiB on a terminal)")
    cat.add_argument("--mode", type=str.upper, choices=[m.value for m in ParseMode], metavar="MODE",
                     help="bad data: permissive (corrupt-record rows in the output), dropmalformed (skipped) or "
                          "failfast (stop); default: good records only, one line per bad region on stderr, exit 1")
    cat.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="any reader option")
    add_password_flags(cat)
    cat.set_defaults(run=run, format_flags=add_format_flags(cat, "cat"))
    return cat


def run(args: argparse.Namespace) -> int:
    """Print the records; 1 when bad regions were reported on stderr, else 0."""
    require_output_format(args.format)
    cls = pick_format(args.source, args.paths, "cat")
    options = reader_options(cls, args.paths, args, args.format_flags, "cat")
    asked = [name for name in options if name.lower() == "mode"]
    if args.mode is not None:
        for name in asked:
            del options[name]
        options["mode"] = args.mode
    reporting = args.mode is None and not asked  # no mode asked for: report bad regions, print good rows only
    source = cls(options)
    json_cols = json_columns(cls, source.schema())
    corrupt = source.common.corrupt_column_or_none if reporting else None
    files = source.list_files()
    bad = 0
    if reporting and "uri" not in options:  # an empty file has no header: mysqlbinlog calls it an error too
        for entry in (f for f in files if f.size == 0):
            _report(f"{display_name(entry.uri)} at byte 0: empty file")
            bad += 1
        files = [f for f in files if f.size > 0]
    splits = source.plan(files)
    bar = _progress(sum(f.size for f in files), args.progress)
    out = sys.stdout
    try:
        for split in splits:
            for batch in source.read_split(split):
                if corrupt is not None:
                    batch, messages = _take_corrupt(batch, corrupt)
                    for message in messages:
                        _report(message)
                    bad += len(messages)
                write_batch(out, batch, args.format, json_cols)
            if bar is not None:
                bar.update((split.end if split.end is not None else split.file_size) - split.start)
    except BrokenPipeError:  # `spark-logsource cat ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if bar is not None:
            bar.close()
    return 1 if bad else 0


def _take_corrupt(batch: pa.RecordBatch, column: str) -> tuple[pa.RecordBatch, list[str]]:
    """``batch``'s good rows without the corrupt-record column, and the messages of its corrupt-record rows
    (each names its file, byte offset and reason)."""
    cells = batch.column(column)
    good = pc.is_null(cells)
    messages = [] if cells.null_count == len(cells) else [m for m in cells.to_pylist() if m is not None]
    if messages:
        batch = batch.filter(good)
    return batch.drop_columns([column]), messages


def _report(message: str) -> None:
    print(f"spark-logsource: {message}", file=sys.stderr, flush=True)


def _progress(total: int, mode: str) -> Any:
    show = mode == "always" or (mode == "auto" and total >= PROGRESS_MIN_BYTES and sys.stderr.isatty())
    if not show:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        log.warning("no progress bar: tqdm is not installed (pip install 'spark-logsource[cli]')")
        return None

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, desc="reading")
