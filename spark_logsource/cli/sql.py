"""``spark-logsource sql``: a Spark SQL query over logs registered as temporary views, on a local (or given) Spark."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spark_logsource.arrow.variant import decode_variant
from spark_logsource.cli.formats import add_password, add_password_flags, uri_scheme, warn_password_on_command_line
from spark_logsource.cli.output import json_text, plain, write_table
from spark_logsource.errors import OptionError
from spark_logsource.registry import format_class


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
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
    sql.add_argument("--columnar", action="store_true",
                     help="read the views of log files through the columnar JVM reader (read_columnar, "
                          "jars/arrow-pipe): the same rows, faster for typed columns")
    add_password_flags(sql)
    sql.set_defaults(run=run)
    return sql


def _spark_value(value: Any) -> Any:
    if hasattr(value, "toJson"):  # VariantVal: our decoder keeps every digit of its decimals (toJson may not)
        return decode_variant(bytes(value.value), bytes(value.metadata))
    if isinstance(value, bytearray | bytes):
        return bytes(value).hex()
    return plain(value)


def _view_options(pairs: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = {}
    for kv in pairs:
        key, _, value = kv.partition("=")
        view, _, name = key.partition(".")
        if not name:
            raise OptionError("--option", f"expected VIEW.OPTION=VALUE, got {kv!r}")
        if name.lower() == "password":
            warn_password_on_command_line()
        options.setdefault(view, {})[name] = value
    return options


def run(args: argparse.Namespace) -> int:
    # Spark is needed by this subcommand only; the session lives with the Spark layer
    from spark_logsource.spark.columnar import FILE_FORMATS, read_columnar
    from spark_logsource.spark.local_session import local_spark

    with local_spark("spark-logsource sql", args.master, args.pushdown, columnar=args.columnar) as spark:
        options = _view_options(args.option)
        live = 0
        for spec in args.view:
            name, _, rest = spec.partition("=")
            fmt, _, path = rest.partition(":")
            if not (name and fmt and path):
                raise OptionError("--view", f"expected NAME=FORMAT:PATH[,PATH...], got {spec!r}")
            cls = format_class(fmt)  # a clear error for an unknown format
            view_options = options.setdefault(name, {})
            server = next((v for k, v in view_options.items() if k.lower() == "uri"), path)
            if uri_scheme(server) in cls.uri_schemes:  # a live server: the password of --password-stdin / env
                add_password(view_options, server, args)
                live += 1
            paths = path.split(",") if "," in path else path
            # a view holding a password (schemaFrom a server) stays on the data source: the columnar reader refuses it
            secret = any(k.lower() == "password" for k in view_options)
            if args.columnar and cls.name in FILE_FORMATS and not secret:
                read_columnar(spark, cls.name, paths, **view_options).createOrReplaceTempView(name)
            else:
                spark.read.format(fmt).options(**view_options).load(paths).createOrReplaceTempView(name)
        if args.password_stdin and not live:
            raise OptionError("--password-stdin", "applies to a view of a live server (FORMAT:scheme://user@host)")
        df = spark.sql(args.query)
        columns = df.columns
        if args.format == "json":
            for row in df.toLocalIterator():
                record = {c: _spark_value(v) for c, v in zip(columns, row, strict=True)}
                sys.stdout.write(json_text(record) + "\n")
        else:
            write_table(sys.stdout, columns, ([_spark_value(v) for v in row] for row in df.toLocalIterator()))
    return 0
