"""A new user's first hour: the README's own examples, as written, on the repository's samples.

Every fenced ``python`` / ``bash`` block of README.md is either run here or listed in :data:`NOT_RUN` with the
reason (a live server, a sink this machine lacks); a new block that is neither fails the test, so the README's
examples cannot drift from what the package does. Python blocks run statement by statement in one namespace with
the session's ``spark``; shell lines run as subprocesses of the installed ``spark-logsource``.

The examples name paths of a production machine (``/var/lib/tarantool/``). :data:`PATHS` is the whole mapping from
those to the samples — applied to the statement's text before it runs, and each one must be found there, so a
README edit that drops a path fails here rather than running something else. The one other change: a ``for``
loop whose body is only ``...`` collects its loop variable (the README leaves the body to the reader).

Results are checked against what the databases' own readers say about the same files (Tarantool's
``xlog.pairs()``, ``mariadb-binlog -vv``) or, for what they do not show, the Arrow API (``spark_logsource.read``).
"""

from __future__ import annotations

import ast
import collections
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from tests.support.notebooks import mariadb_rows, tarantool_rows
from tests.support.oracle.mariadb_events import run_mariadb_binlog

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SAMPLES = REPO / "samples"
TXN = SAMPLES / "tarantool" / "txn"  # the workload whose space 512 has LSNs past 1000 (multi-statement txns)
TYPED = SAMPLES / "tarantool" / "typed"  # the workload with a `users` space
MYSQL = SAMPLES / "mysql"
FULL_IMAGE = MYSQL / "full-image.000001"
TAP = REPO / "tests" / "fixtures" / "memcached-tap" / "couchbase-1.8.1-dump.tap"
CLI = Path(sys.executable).with_name("spark-logsource")
TIMEOUT_S = 600

#: The README's example paths → the samples here, per statement (first words of the statement → substitutions).
PATHS: dict[str, dict[str, str]] = {
    'df = spark.read.format("tarantool-xlog").load(': {"/var/lib/tarantool/": f"{TXN}/"},
    # a directory of binlogs on S3 → the local directory of sample binlogs (S3 itself: tests/core/test_fs.py)
    'changes = spark.read.format("mysql-binlog").load(': {"s3://bucket/binlogs/": f"{MYSQL}/"},
    'users = (spark.read.format("tarantool-xlog")': {"/var/lib/tarantool/": f"{TYPED}/"},
    "table = spark_logsource.read(": {"/var/lib/tarantool": str(TXN)},
    "for batch in spark_logsource.iter_batches(": {'"binlog.000001"': f'"{FULL_IMAGE}"',
                                                   '"binlog.000002"': f'"{MYSQL / "compressed.000001"}"'},
    'orders = (spark.read.format("mysql-binlog")': {"/var/lib/mysql/": str(FULL_IMAGE)},
    'orders = read_columnar(spark, "mysql-binlog"': {"/data/binlogs/": str(FULL_IMAGE)},
    "spark-logsource cat /var/lib/tarantool ": {"/var/lib/tarantool": str(TXN)},
    "spark-logsource cat /var/lib/mysql/": {"/var/lib/mysql/binlog.000042": str(FULL_IMAGE)},
    "spark-logsource cat capture.tap": {"capture.tap": str(TAP)},
    'spark-logsource sql "SELECT type, count(*)': {"/var/lib/tarantool": str(TXN)},
}
#: Names the README's examples leave to the reader.
NAMES = {"wal_dir": str(TYPED)}

#: Statements, lines and blocks not run here (first words → why).
NOT_RUN = {
    "bash scripts/test.sh": "the CI command itself: it runs this test",
    '(spark.readStream.format("mysql-replication")': "a live MySQL server and a Delta Lake sink",
    'for batch, offset in spark_logsource.follow("tarantool-replication"': "a live Tarantool server",
    "spark-logsource follow /var/lib/tarantool": "follows until interrupted (tests/core/test_cli*.py follow it)",
    "spark-logsource follow mysql://": "a live MySQL server",
    "SPARK_LOGSOURCE_PASSWORD=... spark-logsource cat tarantool://": "a live Tarantool server",
    'live = (spark.readStream.format("tarantool-replication")': "a live Tarantool server",
    'spark.read.format("tarantool-replication")': "a live Tarantool server",
    'spark.readStream.format("mysql-replication")': "a live MySQL server",
}


@dataclass
class Block:
    line: int
    language: str
    text: str


def readme_blocks() -> list[Block]:
    text = README.read_text()
    return [Block(text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S) if m.group(1) in ("python", "bash")]


def _match(table: dict[str, Any], statement: str) -> str | None:
    keys = [k for k in table if statement.startswith(k)]
    assert len(keys) <= 1, keys
    return keys[0] if keys else None


def substituted(statement: str) -> str:
    """The statement with the README's paths replaced by the samples (each listed path must be in it)."""
    key = _match(PATHS, statement)
    for old, new in (PATHS[key] if key else {}).items():
        assert old in statement, f"README statement no longer names {old!r}: {statement!r}"
        statement = statement.replace(old, new)
    return statement


class Ran:
    """The values of a block's expression statements (``x.show()``: ``x``) and the loops' collected items."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.collected: list[Any] = []


def run_python(source: str, namespace: dict[str, Any], ran: Ran) -> list[str]:
    """Run a README python block statement by statement; return the statements run (README text)."""
    done = []
    for node in ast.parse(source).body:
        text = ast.get_source_segment(source, node)
        assert text is not None
        if _match(NOT_RUN, text.lstrip("(")) or _match(NOT_RUN, text):
            continue
        tree = ast.parse(substituted(text)).body[0]
        if isinstance(tree, ast.For) and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                             and s.value.value is Ellipsis for s in tree.body):
            tree.body = ast.parse(f"_collected.append({ast.unparse(tree.target)})").body
        namespace["_collected"] = ran.collected
        if isinstance(tree, ast.Expr):
            call = tree.value
            shown = (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "show")
            target = call.func.value if shown else call
            value = eval(compile(ast.Expression(target), "README", "eval"), namespace)
            ran.values[text.split("(")[0].split(".")[0] + ("" if not shown else ".show")] = value
            if shown:
                value.show()
        else:
            exec(compile(ast.Module([tree], []), "README", "exec"), namespace)
        done.append(text)
    return done


def run_cli(line: str) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(substituted(line), comments=True)
    assert argv[0] == "spark-logsource", line
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([str(CLI), *argv[1:]], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO, env=env)
    assert proc.returncode == 0, f"{line}\n{proc.stderr[-3000:]}"
    return proc


def tsv(stdout: str) -> list[dict[str, str]]:
    """``spark-logsource sql``'s table output: a header line, then one tab-separated line per row."""
    lines = stdout.strip("\n").split("\n")
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def oracle_tarantool(wal_dir: Path) -> list[dict[str, Any]]:
    return tarantool_rows(wal_dir) + tarantool_rows(wal_dir, ".snap")


# -- the README's opening ----------------------------------------------------------------------------------------
def test_readme_opens_with_the_two_commands():
    first = readme_blocks()[0]
    assert first.line == 3 and first.language == "bash"
    commands = [line.split("#")[0].strip() for line in first.text.strip().split("\n")]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (REPO / ".ci" / "run").read_text().strip().endswith("bash scripts/test.sh")
    demo = (REPO / "scripts" / "demo.sh").read_text()
    assert "bash scripts/setup.sh" in demo
    assert "tarantool-xlog:samples/tarantool" in demo and "mysql-binlog:samples/mysql" in demo


#: The python blocks the tests below run (first words); a python block not here must be all NOT_RUN statements.
RUN_BLOCKS = ('df = spark.read.format("tarantool-xlog")', "import spark_logsource",
              'users = spark.read.format("tarantool-xlog").option("view", "space")',
              'orders = (spark.read.format("mysql-binlog")', "from pyspark.sql import SparkSession")


def test_every_readme_block_is_run_or_says_why_not():
    for block in readme_blocks():
        if block.language == "bash":
            for line in block.text.strip().split("\n"):
                known = _match(NOT_RUN, line) or _match(PATHS, line) or line.startswith("bash scripts/demo.sh")
                assert known, f"README line {block.line}: {line!r} is neither run by this module nor in NOT_RUN"
        elif not block.text.startswith(RUN_BLOCKS):
            for node in ast.parse(block.text).body:
                text = ast.get_source_segment(block.text, node) or ""
                assert _match(NOT_RUN, text), f"README line {block.line}: {text!r} is not run by this module"


# -- python blocks -----------------------------------------------------------------------------------------------
def _block(first_words: str) -> Block:
    (block,) = [b for b in readme_blocks() if b.text.startswith(first_words)]
    return block


@pytest.mark.spark
def test_readme_spark_examples(spark):
    ran = Ran()
    namespace: dict[str, Any] = {"spark": spark, **NAMES}
    run_python(_block('df = spark.read.format("tarantool-xlog")').text, namespace, ran)

    shown = ran.values["df.show"].collect()
    expected = [r for r in oracle_tarantool(TXN) if r["space_id"] == 512 and r["lsn"] >= 1000]
    assert len(shown) == len(expected) > 0
    assert sorted((r["lsn"], r["type"]) for r in shown) == sorted((r["lsn"], r["type"]) for r in expected)

    changes = ran.values["changes"]
    assert changes.columns[:2] == ["table", "op"]
    prices = collections.Counter((r[0], r[1], r[2]) for r in changes.collect())
    oracle = collections.Counter()
    for binlog in sorted(MYSQL.glob("*.0*")):
        for row in mariadb_rows(binlog):
            price = row["after"].get("@6") if row["table"] == "orders" else None  # shop.orders' 6th column
            oracle[(row["table"], row["op"], None if price is None else Decimal(price))] += 1
    assert prices == oracle
    assert sum(n for (table, _, price), n in prices.items() if price is not None) > 200

    users = namespace["users"]
    arrow = spark_logsource.read("tarantool-xlog", str(TYPED), view="space", space="users")
    assert users.columns == arrow.column_names and "email" in users.columns
    assert sorted(r["lsn"] for r in users.collect()) == sorted(arrow.column("lsn").to_pylist())


@pytest.mark.spark
def test_readme_typed_examples(spark):
    ran = Ran()
    namespace: dict[str, Any] = {"spark": spark, **NAMES}
    run_python(_block('users = spark.read.format("tarantool-xlog").option("view", "space")').text, namespace, ran)
    space = spark_logsource.read("tarantool-xlog", str(TYPED), view="space", space="users").num_rows
    assert namespace["users"].count() == space > 0
    state = spark_logsource.read("tarantool-xlog", str(TYPED), view="state", space="users").to_pylist()
    assert sorted((r["id"], r["name"]) for r in namespace["state"].collect()) == sorted(
        (r["id"], r["name"]) for r in state)

    run_python(_block('orders = (spark.read.format("mysql-binlog")').text, namespace, ran)
    rows = ran.values["orders"].collect()
    letters = {"insert": "c", "update": "u", "delete": "d"}
    oracle = [r for r in mariadb_rows(FULL_IMAGE) if (r["db"], r["table"]) == ("shop", "orders")]
    image = [r["after"] or {} for r in oracle]
    assert sorted((r[0], r[1], r[2]) for r in rows) == sorted(
        (letters[o["op"]], None if not a else int(a["@1"]), None if a.get("@6") is None else Decimal(a["@6"]))
        for o, a in zip(oracle, image, strict=True))
    assert all(r[3] for r in rows)  # source.gtid


@pytest.mark.spark
def test_readme_columnar_example(spark):
    ran = Ran()
    namespace: dict[str, Any] = {"spark": spark, **NAMES}
    run_python(_block("from pyspark.sql import SparkSession").text, namespace, ran)
    assert namespace["spark"] is spark  # getOrCreate: the suite's session, which carries the jar
    ours = namespace["orders"]
    theirs = spark.read.format("mysql-binlog").option("view", "table").option("table", "shop.orders") \
        .load(str(FULL_IMAGE))
    key = ["op", "after.id", "after.price", "source.pos", "source.row_index"]
    assert sorted(map(tuple, ours.select(*key).collect())) == sorted(map(tuple, theirs.select(*key).collect()))
    assert ours.count() > 0


def test_readme_arrow_examples():
    ran = Ran()
    namespace: dict[str, Any] = {}
    run_python(_block("import spark_logsource").text, namespace, ran)
    expected = [r for r in oracle_tarantool(TXN) if r["space_id"] == 512 and r["lsn"] >= 1000]
    table = namespace["table"]
    assert sorted(table.column("lsn").to_pylist()) == sorted(r["lsn"] for r in expected) and table.num_rows > 0
    events = sum(len(run_mariadb_binlog(p).events) for p in (FULL_IMAGE, MYSQL / "compressed.000001"))
    assert ran.collected and sum(b.num_rows for b in ran.collected) == events
    assert "event_type" in ran.collected[0].schema.names


# -- shell lines ---------------------------------------------------------------------------------------------------
def _line(first_words: str) -> str:
    lines = [line for b in readme_blocks() if b.language == "bash" for line in b.text.split("\n")
             if line.startswith(first_words)]
    assert len(lines) == 1, (first_words, lines)
    return lines[0]


def test_readme_cli_cat_examples():
    import yaml

    docs = list(yaml.safe_load_all(run_cli(_line("spark-logsource cat /var/lib/tarantool ")).stdout))
    expected = [r for r in oracle_tarantool(TXN) if r["space_id"] == 512 and 1000 <= r["lsn"] < 2000]
    assert sorted(d["lsn"] for d in docs) == sorted(r["lsn"] for r in expected) and docs

    rows = [json.loads(x) for x in run_cli(_line("spark-logsource cat /var/lib/mysql/")).stdout.splitlines()]
    oracle = [r for r in mariadb_rows(FULL_IMAGE) if (r["db"], r["table"]) == ("shop", "orders")]
    assert collections.Counter(r["op"] for r in rows) == collections.Counter(r["op"] for r in oracle)
    assert {(r["database"], r["table"]) for r in rows} == {("shop", "orders")}

    packets = [json.loads(x) for x in run_cli(_line("spark-logsource cat capture.tap")).stdout.splitlines()]
    arrow = spark_logsource.read("memcached-tap", str(TAP))
    assert [p["opcode"] for p in packets] == arrow.column("opcode").to_pylist() and packets


def test_readme_cli_sql_example():
    rows = tsv(run_cli(_line('spark-logsource sql "SELECT type, count(*)')).stdout)
    expected = collections.Counter(r["type"] for r in oracle_tarantool(TXN))
    assert {r["type"]: int(r["count(1)"]) for r in rows} == dict(expected)


# -- scripts/demo.sh's queries -------------------------------------------------------------------------------------
def demo_commands() -> list[str]:
    """The ``spark-logsource sql`` commands of scripts/demo.sh, each as bash reads it (quoted newlines and
    backslash continuations included)."""
    commands, current = [], None
    for line in (REPO / "scripts" / "demo.sh").read_text().split("\n"):
        if current is None and line.startswith(".venv/bin/spark-logsource sql"):
            current = []
        if current is None:
            continue
        current.append(line)
        text = "\n".join(current)
        try:
            shlex.split(text)
        except ValueError:  # a quote still open
            continue
        if not line.endswith("\\"):
            commands.append(text)
            current = None
    return commands


def test_demo_queries_on_the_samples():
    commands = demo_commands()
    assert len(commands) == 2
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    cli = str(CLI)
    outputs = []
    for command in commands:
        proc = subprocess.run(["bash", "-c", command.replace(".venv/bin/spark-logsource", shlex.quote(cli), 1)],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs.append(tsv(proc.stdout))
    tarantool, mysql = outputs

    groups: dict[tuple, list[dict[str, Any]]] = collections.defaultdict(list)
    for wal_dir in sorted((SAMPLES / "tarantool").iterdir()):
        for r in tarantool_rows(wal_dir):
            if r["space_id"] is not None and r["space_id"] >= 512:
                groups[(wal_dir.name, str(r["space_id"]), r["type"])].append(r)
    assert [(r["workload"], r["space_id"], r["type"], int(r["rows"]), int(r["first_lsn"]), int(r["last_lsn"]),
             int(r["transactions"])) for r in tarantool] == [
        (*key, len(rs), min(r["lsn"] for r in rs), max(r["lsn"] for r in rs),
         len({(r["replica_id"], r["tsn"]) for r in rs})) for key, rs in sorted(groups.items())]
    assert any(int(r["transactions"]) < int(r["rows"]) for r in tarantool)  # multi-statement transactions

    expected = []
    for binlog in sorted(MYSQL.glob("*.0*")):
        ops = collections.Counter((r["db"], r["table"], r["op"]) for r in mariadb_rows(binlog))
        gtid, seen, times = None, collections.defaultdict(set), collections.defaultdict(list)
        for event in run_mariadb_binlog(binlog).events:
            if event.kind == "GTID":
                gtid = event.description.split()[1]
            elif event.kind == "Table_map:":
                db, table = re.match(r"Table_map: `(.*)`\.`(.*)`", event.description).groups()
                seen[(db, table)].add(gtid)
                times[(db, table)].append(event.timestamp.strftime("%Y-%m-%dT%H:%M:%S.000000"))
        for db, table in sorted(seen):
            expected.append({"binlog": binlog.name.split(".")[0], "database": db, "table": table,
                             "inserts": str(ops[(db, table, "insert")]), "updates": str(ops[(db, table, "update")]),
                             "deletes": str(ops[(db, table, "delete")]), "transactions": str(len(seen[(db, table)])),
                             "first_change": min(times[(db, table)]), "last_change": max(times[(db, table)])})
    assert mysql == expected


# -- an empty directory ---------------------------------------------------------------------------------------------
@pytest.mark.spark
def test_directory_of_wal_directories_reads_zero_rows_with_a_warning(spark):
    """``load("samples/tarantool")``: no log file at its top level (one WAL directory per workload below it)."""
    path = str(SAMPLES / "tarantool")  # the README's relative path, made absolute for Spark's workers
    assert spark.read.format("tarantool-xlog").load(path).count() == 0
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    argv = ["sql", "SELECT count(*) AS n FROM x", "--view", "x=tarantool-xlog:samples/tarantool"]
    proc = subprocess.run([str(CLI), *argv], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert tsv(proc.stdout) == [{"n": "0"}]
    warnings = [line for line in proc.stderr.splitlines() if "samples/tarantool" in line]
    assert any("recursiveFileLookup" in line for line in warnings), proc.stderr[-3000:]
