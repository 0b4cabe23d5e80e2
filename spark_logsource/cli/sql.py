"""``spark-logsource sql``: a Spark SQL query over logs registered as temporary views, on a local (or given) Spark."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spark_logsource.cli.output import plain, write_table
from spark_logsource.registry import format_class


def add_parser(sub: Any) -> argparse.ArgumentParser:
    sql = sub.add_parser("sql", help="run a Spark SQL query over logs on a local (or given) Spark")
    sql.add_argument("query")
    sql.add_argument("--view", action="append", required=True, metavar="NAME=FORMAT:PATH",
                     help="register a temporary view (repeatable), e.g. v=FORMAT:/var/lib/db/logs")
    sql.add_argument("--option", action="append", default=[], metavar="VIEW.NAME=VALUE",
                     help="reader option of one view, e.g. v.batchSize=1024")
    sql.add_argument("--master", default="local[2]")
    sql.add_argument("--format", choices=["table", "json"], default="table")
    sql.add_argument("--pushdown", action=argparse.BooleanOptionalAction, default=True,
                     help="spark.sql.python.filterPushdown.enabled")
    sql.set_defaults(run=run)
    return sql


def _spark_value(value: Any) -> Any:
    if hasattr(value, "toJson"):  # VariantVal
        return json.loads(value.toJson())
    if isinstance(value, bytearray | bytes):
        return bytes(value).hex()
    return plain(value)


def _view_options(pairs: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = {}
    for kv in pairs:
        key, _, value = kv.partition("=")
        view, _, name = key.partition(".")
        if not name:
            raise SystemExit(f"--option {kv!r}: expected VIEW.OPTION=VALUE")
        options.setdefault(view, {})[name] = value
    return options


def run(args: argparse.Namespace) -> int:
    # Spark is needed by this subcommand only; the session lives with the Spark layer
    from spark_logsource.readers.local_session import local_spark

    with local_spark("spark-logsource sql", args.master, args.pushdown) as spark:
        options = _view_options(args.option)
        for spec in args.view:
            name, _, rest = spec.partition("=")
            fmt, _, path = rest.partition(":")
            if not (name and fmt and path):
                raise SystemExit(f"--view {spec!r}: expected NAME=FORMAT:PATH[,PATH...]")
            format_class(fmt)  # a clear error for an unknown format
            reader = spark.read.format(fmt).options(**options.get(name, {}))
            reader.load(path.split(",") if "," in path else path).createOrReplaceTempView(name)
        df = spark.sql(args.query)
        columns = df.columns
        if args.format == "json":
            for row in df.toLocalIterator():
                record = {c: _spark_value(v) for c, v in zip(columns, row, strict=True)}
                sys.stdout.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        else:
            write_table(sys.stdout, columns, ([_spark_value(v) for v in row] for row in df.toLocalIterator()))
    return 0
