"""``spark-logsource follow``: print rows as they are written (like ``tail -f``), without Spark, until Ctrl-C.

The target is a directory a format can tail, or a live server's URI (``scheme://host:port``) whose scheme a
format that can follow declares. Ctrl-C ends the batch being printed and the loop; the position to resume from
(the end of the last range printed whole) goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from spark_logsource.cli.formats import add_format_flags, add_password_flags, pick_format, reader_options
from spark_logsource.cli.output import BATCH_FORMATS, json_columns, require_output_format, write_batch
from spark_logsource.registry import format_names


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    follow = sub.add_parser("follow", help="print rows as they are written (like tail -f), without Spark")
    follow.add_argument("target", metavar="DIR|URI", help="a WAL directory, or a live server URI")
    follow.add_argument("--source", choices=format_names(), metavar="FORMAT",
                        help=f"streaming format (default: detected from DIR|URI): {', '.join(format_names())}")
    follow.add_argument("--from", dest="from_position", metavar="POSITION",
                        help="earliest, latest, or a JSON offset printed by an earlier run (default: the format's own)")
    follow.add_argument("--output", choices=BATCH_FORMATS, default="json")
    follow.add_argument("--interval", type=float, default=0.5, help="seconds between polls when idle")
    follow.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="any reader option")
    add_password_flags(follow)
    follow.set_defaults(run=run, format_flags=add_format_flags(follow, "follow"))
    return follow


def run(args: argparse.Namespace) -> int:
    """Print rows until Ctrl-C; the resume position goes to stderr."""
    from spark_logsource.streaming.stream import offset_json

    require_output_format(args.output)
    cls = pick_format(args.source, [args.target], "follow")
    options = reader_options(cls, [args.target], args, args.format_flags, "follow")
    if args.from_position:
        options["startingPosition"] = args.from_position
    stream = cls(options).stream()
    json_cols = json_columns(cls, stream.schema())
    out = sys.stdout
    done: dict[str, Any] | None = None  # end of the last range printed whole: where a next run resumes
    start = stream.initial_offset()
    budget = stream.default_budget()
    stop = threading.Event()
    previous = _on_sigint(lambda *_: stop.set())  # Ctrl-C ends the current batch, then the loop
    try:
        # The loop of spark_logsource.follow(), kept here to know when a range is printed whole.
        while not stop.is_set():
            end = stream.latest_offset(start, budget)
            if offset_json(end) == offset_json(start):
                done = start
                stop.wait(args.interval)
                continue
            for batch in (b for slice_ in stream.plan(start, end) for b in stream.read_slice(slice_)):
                write_batch(out, batch, args.output, json_cols)
                out.flush()
                if stop.is_set():
                    break
            else:
                stream.commit(end)
                start = done = end
    except BrokenPipeError:  # `spark-logsource follow ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        _on_sigint(previous)
        stream.stop()
    if done is not None:
        print(f"spark-logsource: stopped; resume with --from '{offset_json(done)}'", file=sys.stderr)
    return 0


def _on_sigint(handler: Any) -> Any:
    """Install ``handler`` for SIGINT (main thread only); the previous handler, or None when not installed."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, handler)
