"""``spark-logsource``: print log records without Spark (``cat``), follow a growing log or a live server
(``follow``), or query logs with Spark SQL (``sql``).

    spark-logsource cat /var/lib/db/wal --format yaml        # the format is detected from the files
    spark-logsource cat /var/lib/db/wal --source FORMAT --option batchSize=1024
    spark-logsource follow SCHEME://user@host:port --from latest
    spark-logsource sql "SELECT count(*) FROM v" --view v=FORMAT:/var/lib/db/wal

Each format brings its own flags (``spark-logsource cat --help`` lists them by format), recognises its own files
and names the URI schemes of its live servers.
"""

# This package names no format: the registry lists them and each LogFormat declares its part (formats.py).

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from spark_logsource import __version__
from spark_logsource.cli import cat, follow, sql
from spark_logsource.errors import CorruptDataError, LogSourceError
from spark_logsource.registry import format_names

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``spark-logsource`` parser: its subcommands, each with the flags of every registered format."""
    parser = argparse.ArgumentParser(prog="spark-logsource", description=__doc__,
                                     epilog=f"formats: {', '.join(format_names())}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level on stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (cat, follow, sql):
        # -v after the subcommand too; SUPPRESS keeps a -v given before it
        command.add_parser(sub).add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                                             help="log at INFO level on stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; 0 on success, 1 for bad data (``cat`` reports every bad region, ``--mode failfast``
    the first), 2 for any other error of ours (a bad option, a missing file, a SQL error): one line on stderr,
    without a traceback."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.run(args))
    except LogSourceError as exc:
        print(f"spark-logsource: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, CorruptDataError) else 2
