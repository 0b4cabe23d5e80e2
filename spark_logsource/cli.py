"""``spark-logsource``: print log records without Spark (``cat``), or query them with Spark SQL (``sql``).

    spark-logsource cat /var/lib/tarantool --space 512 --from 1000 --format json
    spark-logsource cat /var/lib/mysql/binlog.000042 --database shop --view events
    spark-logsource sql "SELECT type, count(*) FROM xlog GROUP BY type" --view xlog=tarantool-xlog:/var/lib/tarantool
    spark-logsource follow /var/lib/tarantool --space 512 --from latest
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from spark_logsource.errors import LogSourceError, OptionError
from spark_logsource.fs import list_files, open_input
from spark_logsource.jsontext import datetime_text
from spark_logsource.registry import format_class

log = logging.getLogger("spark_logsource.cli")

TARANTOOL_MAGICS = (b"XLOG\n", b"SNAP\n", b"VYLOG", b"RUN\n", b"INDEX")
PROGRESS_MIN_BYTES = 32 << 20


def detect_format(paths: Sequence[str]) -> str:
    """``tarantool-xlog`` or ``mysql-binlog``, from the first file the paths name or contain."""
    for path in paths:
        for entry in list_files([path], recursive=True)[:50]:
            name = entry.uri.split("?", 1)[0]
            if name.endswith((".xlog", ".snap", ".vylog", ".inprogress")):
                return "tarantool-xlog"
            with open_input(entry.uri) as f:
                head = f.read(5)
            if head.startswith(TARANTOOL_MAGICS):
                return "tarantool-xlog"
            if head[:4] == b"\xfebin" or head[:2] == b"\x1f\x8b":
                return "mysql-binlog"
    raise LogSourceError(f"cannot tell the log format of {', '.join(paths)}: use --source")


def _cat_options(args: argparse.Namespace, fmt: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for kv in args.option:
        name, sep, value = kv.partition("=")
        if not sep or not name:
            raise OptionError("--option", f"expected NAME=VALUE, got {kv!r}")
        options[name] = value
    if fmt == "tarantool-xlog":
        options["tupleFormat"] = "json"
        pairs = {"spaceId": args.space, "replicaId": args.replica, "types": args.types}
        for name, values in pairs.items():
            if values:
                options[name] = ",".join(str(v) for v in values)
        if args.from_lsn is not None:
            options["fromLsn"] = args.from_lsn
        if args.to_lsn is not None:
            options["toLsn"] = args.to_lsn
    else:
        options["rowFormat"] = "json"
        simple = {"startPosition": args.start_position, "stopPosition": args.stop_position,
                  "startDatetime": args.start_datetime, "stopDatetime": args.stop_datetime, "view": args.view}
        options.update({k: v for k, v in simple.items() if v is not None})
        lists = {"serverId": args.server_id, "databases": args.database, "tables": args.table}
        options.update({k: ",".join(str(x) for x in v) for k, v in lists.items() if v})
    return options


def _plain(value: Any) -> Any:
    """A scalar column's value as JSON / YAML data, rendered as the JSON-text columns render theirs."""
    if isinstance(value, dt.datetime):
        return datetime_text(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def json_line(row: dict[str, Any], json_columns: frozenset[str]) -> str:
    """One JSON object; the JSON-text columns are written as the reader made them (never re-encoded)."""
    parts = []
    for key, value in row.items():
        text = value if key in json_columns and value is not None else json.dumps(_plain(value), ensure_ascii=False)
        parts.append(f"{json.dumps(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def iter_records(batches: Iterator[pa.RecordBatch], json_columns: frozenset[str]) -> Iterator[dict[str, Any]]:
    """Rows as plain dicts; the JSON-text columns are parsed so they nest in the output (YAML)."""
    for batch in batches:
        for row in batch.to_pylist():
            yield {k: (json.loads(v) if k in json_columns and v is not None else _plain(v)) for k, v in row.items()}


def cmd_cat(args: argparse.Namespace) -> int:
    fmt_name = args.source or detect_format(args.paths)
    source = format_class(fmt_name)({**_cat_options(args, fmt_name), "paths": list(args.paths)})
    schema = source.schema()
    json_columns = frozenset(f.name for f in schema if f.name in ("key", "tuple", "ops", "extra", "before",
                                                                   "after", "data"))
    files = source.list_files()
    splits = source.plan(files)
    total = sum(f.size for f in files)
    bar = _progress(total, args.progress)
    out = sys.stdout
    try:
        for split in splits:
            if args.format == "yaml":
                import yaml

                for record in iter_records(source.read_split(split), json_columns):
                    out.write(yaml.safe_dump(record, explicit_start=True, sort_keys=False, allow_unicode=True))
            else:
                for batch in source.read_split(split):
                    for row in batch.to_pylist():
                        out.write(json_line(row, json_columns))
                        out.write("\n")
            if bar is not None:
                bar.update((split.end if split.end is not None else split.file_size) - split.start)
    except BrokenPipeError:  # `spark-logsource cat ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if bar is not None:
            bar.close()
    return 0


def _progress(total: int, mode: str):
    show = mode == "always" or (mode == "auto" and total >= PROGRESS_MIN_BYTES and sys.stderr.isatty())
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, desc="reading")


def _spark_value(value: Any) -> Any:
    if hasattr(value, "toJson"):  # VariantVal
        return json.loads(value.toJson())
    if isinstance(value, bytearray | bytes):
        return bytes(value).hex()
    return _plain(value)


def cmd_sql(args: argparse.Namespace) -> int:
    from pyspark.sql import SparkSession

    import spark_logsource

    builder = SparkSession.builder.appName("spark-logsource sql").config("spark.ui.showConsoleProgress", "false")
    if args.master:
        builder = builder.master(args.master)
    builder = builder.config("spark.sql.python.filterPushdown.enabled", "true" if args.pushdown else "false")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_logsource.register(spark)
        options: dict[str, dict[str, str]] = {}
        for kv in args.option:
            key, _, value = kv.partition("=")
            view, _, name = key.partition(".")
            if not name:
                raise SystemExit(f"--option {kv!r}: expected VIEW.OPTION=VALUE")
            options.setdefault(view, {})[name] = value
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
            sys.stdout.write("\t".join(columns) + "\n")
            for row in df.toLocalIterator():
                cells = [_spark_value(v) for v in row]
                sys.stdout.write("\t".join("NULL" if c is None else
                                           json.dumps(c, default=str) if isinstance(c, dict | list) else str(c)
                                           for c in cells) + "\n")
    finally:
        spark.stop()
    return 0


#: URI schemes of live sources → their streaming format (``follow tarantool://host:3301``).
FOLLOW_SCHEMES = {"tarantool": "tarantool-replication"}
_JSON_TEXT_COLUMNS = ("key", "tuple", "ops", "extra", "before", "after", "data")


def _follow_format(target: str) -> str:
    scheme = target.split("://", 1)[0].lower() if "://" in target else ""
    if scheme in FOLLOW_SCHEMES:
        return FOLLOW_SCHEMES[scheme]
    return detect_format([target])


def cmd_follow(args: argparse.Namespace) -> int:
    """Print rows as they are written (like ``tail -f``) until Ctrl-C; the resume position goes to stderr."""
    from spark_logsource.streaming.stream import offset_json

    fmt_name = args.source or _follow_format(args.target)
    options: dict[str, Any] = {}
    for kv in args.option:
        name, sep, value = kv.partition("=")
        if not sep or not name:
            raise OptionError("--option", f"expected NAME=VALUE, got {kv!r}")
        options[name] = value
    if fmt_name.startswith("tarantool"):
        options.setdefault("tupleFormat", "json")
        if args.space:
            options["spaceId"] = ",".join(str(v) for v in args.space)
    if args.from_position:
        options["startingPosition"] = args.from_position
    stream = format_class(fmt_name)({**options, "paths": [args.target]}).stream()
    json_columns = frozenset(f.name for f in stream.schema() if f.name in _JSON_TEXT_COLUMNS
                             and pa.types.is_string(f.type))
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
                _print_batch(out, batch, args.output, json_columns)
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


def _print_batch(out: Any, batch: pa.RecordBatch, output: str, json_columns: frozenset[str]) -> None:
    if output == "yaml":
        import yaml

        for record in iter_records(iter([batch]), json_columns):
            out.write(yaml.safe_dump(record, explicit_start=True, sort_keys=False, allow_unicode=True))
    else:
        for row in batch.to_pylist():
            out.write(json_line(row, json_columns))
            out.write("\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark-logsource", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    cat = sub.add_parser("cat", help="print records as JSON lines or YAML documents, without Spark")
    cat.add_argument("paths", nargs="+", metavar="FILE|DIR")
    cat.add_argument("--source", choices=["tarantool-xlog", "mysql-binlog"], help="format (default: detected)")
    cat.add_argument("--format", choices=["json", "yaml"], default="json")
    cat.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                     help="progress bar on stderr (auto: for inputs over 32 MiB on a terminal)")
    cat.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="any reader option")
    tt = cat.add_argument_group("tarantool-xlog (like tt cat)")
    tt.add_argument("--space", action="append", type=int, help="space id (repeatable)")
    tt.add_argument("--replica", action="append", type=int, help="replica id (repeatable)")
    tt.add_argument("--types", action="append", help="request type name or code (repeatable)")
    tt.add_argument("--from", dest="from_lsn", type=int, help="first LSN (inclusive)")
    tt.add_argument("--to", dest="to_lsn", type=int, help="last LSN (exclusive)")
    my = cat.add_argument_group("mysql-binlog (like mysqlbinlog)")
    my.add_argument("--start-position", type=int)
    my.add_argument("--stop-position", type=int)
    my.add_argument("--start-datetime")
    my.add_argument("--stop-datetime")
    my.add_argument("--server-id", action="append", type=int)
    my.add_argument("--database", action="append")
    my.add_argument("--table", action="append", help="db.table (wildcards allowed; repeatable)")
    my.add_argument("--view", choices=["changes", "events"])

    follow = sub.add_parser("follow", help="print rows as they are written (like tail -f), without Spark")
    follow.add_argument("target", metavar="DIR|URI", help="a WAL directory, or a live server URI")
    follow.add_argument("--source", help="streaming format (default: detected from DIR|URI)")
    follow.add_argument("--space", action="append", type=int, help="space id (repeatable)")
    follow.add_argument("--from", dest="from_position", metavar="POSITION",
                        help="earliest (default), latest, or a JSON offset printed by an earlier run")
    follow.add_argument("--output", choices=["json", "yaml"], default="json")
    follow.add_argument("--interval", type=float, default=0.5, help="seconds between polls when idle")
    follow.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="any reader option")

    sql = sub.add_parser("sql", help="run a Spark SQL query over logs on a local (or given) Spark")
    sql.add_argument("query")
    sql.add_argument("--view", action="append", required=True, metavar="NAME=FORMAT:PATH",
                     help="register a temporary view (repeatable), e.g. xlog=tarantool-xlog:/var/lib/tarantool")
    sql.add_argument("--option", action="append", default=[], metavar="VIEW.NAME=VALUE",
                     help="reader option of one view, e.g. xlog.spaceId=512")
    sql.add_argument("--master", default="local[2]")
    sql.add_argument("--format", choices=["table", "json"], default="table")
    sql.add_argument("--pushdown", action=argparse.BooleanOptionalAction, default=True,
                     help="spark.sql.python.filterPushdown.enabled")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "cat":
            return cmd_cat(args)
        if args.command == "follow":
            return cmd_follow(args)
        return cmd_sql(args)
    except LogSourceError as exc:
        print(f"spark-logsource: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
