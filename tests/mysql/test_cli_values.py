"""Exact numbers in every text output of the command line, checked against ``mariadb-binlog -vv``.

A real MariaDB writes DECIMAL(38,6) / DECIMAL(20,6), DOUBLE, FLOAT and the extreme BIGINTs; ``spark-logsource
cat`` (``--format json`` and ``yaml``) and ``spark-logsource sql`` (``--format json`` and ``table``) print them,
run as a user runs them, and each printed value must be the value the server's own tool prints: DECIMALs digit for
digit, DOUBLEs the same double, FLOATs the same float32, integers exact (no float, no rounding to 17 digits).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.oracle.mariadb_binlog import OracleValue, run_oracle

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]

COLUMNS = ["id", "d38", "d20", "dbl", "flt", "ubig", "big"]
UNSIGNED = {"ubig"}
ROWS = [
    "(1, -12345678901234.123456, 0.000001, 0.1, 0.1, 18446744073709551615, -9223372036854775808)",
    "(2, 99999999999999999999999999999999.999999, -0.000001, 1e-7, 3.40282e38, 0, 9223372036854775807)",
    "(3, 0.000001, -12345678901234.123456, 1.7976931348623157e308, -1.5, 12345678901234567890, 0)",
    "(4, -0.000001, 99999999999999.999999, 123456789.123456789, 16777217, 9007199254740993, -9007199254740993)",
    "(5, 0, 1.5, -2.2250738585072014e-308, 1e-30, 1, -1)",
]


@pytest.fixture(scope="module")
def numbers_binlog(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One binlog: five inserted rows of extreme numbers, one update, one delete (row-based, full metadata)."""
    def workload(server: Any) -> None:
        server.execute("DROP DATABASE IF EXISTS cli_numbers")
        server.execute("CREATE DATABASE cli_numbers")
        server.execute("CREATE TABLE cli_numbers.n (id INT PRIMARY KEY, d38 DECIMAL(38,6), d20 DECIMAL(20,6), "
                       "dbl DOUBLE, flt FLOAT, ubig BIGINT UNSIGNED, big BIGINT)")
        server.execute("INSERT INTO cli_numbers.n VALUES " + ", ".join(ROWS))
        server.execute("UPDATE cli_numbers.n SET d38 = -d38, d20 = 0.000001 WHERE id = 1")
        server.execute("DELETE FROM cli_numbers.n WHERE id = 3")

    settings = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "binlog_checksum": "CRC32",
                "log_bin_compress": "OFF"}
    files = mariadb.run_workload(workload, settings, dest=tmp_path_factory.mktemp("cli-numbers"))
    assert len(files) == 1, files
    return files[0]


def oracle_images(path: Path) -> list[tuple[str, dict[str, str]]]:
    """(op, {column: printed text}) for every row image mariadb-binlog prints, in order."""
    images = []
    for _, row in sorted(run_oracle(path).items()):
        if row.table != "n":
            continue
        for values in (row.before, row.after):
            if values:
                images.append((row.op, {COLUMNS[int(k[1:]) - 1]: _oracle_text(COLUMNS[int(k[1:]) - 1], v)
                                        for k, v in values.items()}))
    return images


def _oracle_text(column: str, value: OracleValue) -> str:
    text = value.text.strip()
    if column in UNSIGNED and "(" in text:  # a negative signed reading, then the unsigned one: -1 (18446…615)
        return text.split("(")[1].rstrip(")")
    return text.split(" ")[0]


def same_number(column: str, printed: Any, oracle: str) -> bool:
    """Whether the text we printed is the value mariadb-binlog printed (exactly, by the column's type)."""
    assert isinstance(printed, str), f"{column}: {printed!r} was not parsed as printed text"
    if column in ("d38", "d20"):
        return Decimal(printed) == Decimal(oracle)
    if column == "dbl":  # mariadb-binlog prints %.20g: enough digits to name one double
        return float(printed) == float(oracle)
    if column == "flt":  # %g keeps 6 digits; the value must also be a float32 exactly (no widening noise)
        value = float(printed)
        as_float32 = struct.unpack("<f", struct.pack("<f", value))[0]
        return as_float32 == value and float(f"{value:g}") == float(oracle)
    return int(printed) == int(oracle)


def check_images(ours: list[tuple[str, dict[str, Any]]], oracle: list[tuple[str, dict[str, str]]]) -> None:
    assert [op for op, _ in ours] == [op for op, _ in oracle]
    for (op, mine), (_, theirs) in zip(ours, oracle, strict=True):
        for column in COLUMNS:
            assert same_number(column, mine[column], theirs[column]), (op, column, mine[column], theirs[column])


def run_cli(*args: str, timeout: float = 300) -> str:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-m", "spark_logsource.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def texts(line: str) -> Any:
    """A JSON document with every number kept as the text printed."""
    return json.loads(line, parse_float=str, parse_int=str)


def images_of(records: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(r["op"], image) for r in records for image in (r["before"], r["after"]) if isinstance(image, dict)]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_cat_prints_numbers_as_mariadb_binlog_does(numbers_binlog: Path, fmt: str) -> None:
    out = run_cli("cat", str(numbers_binlog), "--table", "cli_numbers.n", "--format", fmt)
    if fmt == "json":
        records = [texts(line) for line in out.splitlines()]
    else:  # BaseLoader: every scalar as the text written
        records = list(yaml.load_all(out, Loader=yaml.BaseLoader))
    oracle = oracle_images(numbers_binlog)
    assert len(oracle) == 5 + 2 + 1
    check_images(images_of(records), oracle)


def test_yaml_numbers_read_back_as_the_json_values(numbers_binlog: Path) -> None:
    """A YAML reader gets numbers (not strings) equal to the JSON lines' values (a guard: exact text must not turn
    the numbers into strings)."""
    as_json = [json.loads(line) for line in
               run_cli("cat", str(numbers_binlog), "--table", "cli_numbers.n").splitlines()]
    as_yaml = list(yaml.safe_load_all(run_cli("cat", str(numbers_binlog), "--table", "cli_numbers.n",
                                              "--format", "yaml")))
    for mine, theirs in zip(images_of(as_yaml), images_of(as_json), strict=True):
        for column in COLUMNS:
            assert isinstance(mine[1][column], int | float), (column, mine[1][column])
            if column not in ("d38", "d20"):  # YAML readers take decimals as floats: only their text is exact
                assert mine[1][column] == theirs[1][column], column


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_sql_prints_numbers_as_mariadb_binlog_does(numbers_binlog: Path, fmt: str) -> None:
    query = ("SELECT op, before, after, variant_get(after, '$.d38', 'decimal(38,6)') AS d38 FROM b "
             "WHERE `table` = 'n' ORDER BY pos, row_index")
    out = run_cli("sql", query, "--view", f"b=mysql-binlog:{numbers_binlog}", "--format", fmt,
                  "--master", "local[1]")
    if fmt == "json":
        records = [texts(line) for line in out.splitlines()]
    else:
        lines = out.splitlines()
        assert lines[0].split("\t") == ["op", "before", "after", "d38"]
        records = []
        for line in lines[1:]:
            op, before, after, d38 = line.split("\t")
            records.append({"op": op, "before": None if before == "NULL" else texts(before),
                            "after": None if after == "NULL" else texts(after), "d38": d38})
    oracle = oracle_images(numbers_binlog)
    check_images(images_of(records), oracle)
    # the typed column: a DECIMAL(38,6) value, printed in full
    afters = [theirs for op, theirs in oracle if op == "insert"]
    typed = [r["d38"] for r in records if r["op"] == "insert"]
    assert [Decimal(t) for t in typed] == [Decimal(a["d38"]) for a in afters]
