"""A new user's first hour with ``spark-logsource``, run as a user runs it (``python -m spark_logsource.cli``).

``--version``; ``-v`` after the subcommand; ``cat`` on damaged input (a truncated binlog, random bytes named
``.xlog``, an empty file) exits non-zero with one line per bad region, as ``mariadb-binlog`` does, unless the user
asked for PERMISSIVE rows; a SQL typo is one line, not a traceback; YAML output without the ``cli`` extra names
the extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spark_logsource

REPO = Path(__file__).resolve().parents[2]
BINLOG = REPO / "samples" / "mysql" / "full-image.000001"
XLOGS = REPO / "samples" / "tarantool" / "dml"


def cli(*args: str, timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "spark_logsource.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env, **kwargs)


def our_lines(stderr: str) -> list[str]:
    """The lines the command itself wrote on stderr (Spark's JVM may add its own)."""
    return [line for line in stderr.splitlines() if line.startswith("spark-logsource:")]


# --- --version, -v ------------------------------------------------------------------------------------------------
def test_version_prints_the_installed_version() -> None:
    done = cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["spark-logsource", importlib.metadata.version("spark-logsource")]
    assert spark_logsource.__version__ == importlib.metadata.version("spark-logsource")


def test_setup_py_takes_the_version_from_the_package() -> None:
    """One place holds the version: setup.py reads the package's, it writes no number of its own."""
    setup = (REPO / "setup.py").read_text()
    assert spark_logsource.__version__ not in setup
    assert "__version__" in setup


@pytest.mark.parametrize("flag", ["-v", "--verbose"])
def test_verbose_after_the_subcommand(flag: str) -> None:
    before = cli(flag, "cat", str(BINLOG))
    after = cli("cat", str(BINLOG), flag)
    assert before.returncode == after.returncode == 0, after.stderr[-2000:]
    assert "INFO " in after.stderr and "looks like mysql-binlog" in after.stderr
    assert after.stdout == before.stdout
    quiet = cli("cat", str(BINLOG))
    assert "INFO " not in quiet.stderr


# --- damaged input ------------------------------------------------------------------------------------------------
def mariadb_binlog_offset(path: Path) -> int:
    """The offset ``mariadb-binlog`` names for the damage in ``path`` (it exits 1 there)."""
    done = subprocess.run(["mariadb-binlog", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    found = re.search(r"Could not read entry at offset (\d+)", done.stderr)
    assert found, done.stderr
    return int(found.group(1))


@pytest.fixture
def truncated_binlog(tmp_path: Path) -> Path:
    data = BINLOG.read_bytes()
    path = tmp_path / "truncated.000001"
    path.write_bytes(data[:len(data) - 40])  # the last event loses its end
    return path


def test_cat_truncated_binlog_exits_1_naming_the_offset(truncated_binlog: Path) -> None:
    done = cli("cat", str(truncated_binlog))
    offset = mariadb_binlog_offset(truncated_binlog)
    assert done.returncode == 1, done.stderr
    lines = our_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert str(truncated_binlog) in lines[0] and f"byte {offset}" in lines[0], (lines, offset)
    assert "Traceback" not in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows, "the good rows before the damage are printed"
    assert all(r.get("_corrupt_record") is None for r in rows)
    good = cli("cat", str(BINLOG))
    assert good.returncode == 0 and not our_lines(good.stderr)


def test_cat_random_bytes_named_xlog_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.xlog"
    path.write_bytes(random.Random(21).randbytes(5000))
    done = cli("cat", str(path))
    assert done.returncode == 1, done.stderr
    lines = our_lines(done.stderr)
    assert len(lines) == 1 and str(path) in lines[0] and "byte 0" in lines[0], done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("name,source", [("00000000000000000000.xlog", None), ("binlog.000001", "mysql-binlog")])
def test_cat_empty_file_exits_1(tmp_path: Path, name: str, source: str | None) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    done = cli("cat", str(path), *(("--source", source) if source else ()))
    assert done.returncode == 1, done.stderr
    lines = our_lines(done.stderr)
    assert len(lines) == 1 and str(path) in lines[0] and "byte 0" in lines[0], done.stderr
    assert done.stdout == ""


def test_cat_several_bad_regions_one_line_each(tmp_path: Path, truncated_binlog: Path) -> None:
    empty = tmp_path / "empty.xlog"
    empty.write_bytes(b"")
    noise = tmp_path / "noise.xlog"
    noise.write_bytes(random.Random(5).randbytes(300))
    done = cli("cat", str(empty), str(noise), str(XLOGS), "--source", "tarantool-xlog")
    assert done.returncode == 1, done.stderr
    lines = our_lines(done.stderr)
    assert len(lines) == 2, done.stderr
    assert sorted(str(p) in line for p in (empty, noise) for line in lines).count(True) == 2
    good = spark_logsource.read("tarantool-xlog", str(XLOGS)).num_rows
    assert len(done.stdout.splitlines()) == good > 0


@pytest.mark.parametrize("spelling", [("--mode", "permissive"), ("--option", "mode=PERMISSIVE")])
def test_cat_permissive_keeps_corrupt_rows_and_exits_0(truncated_binlog: Path, spelling: tuple[str, str]) -> None:
    done = cli("cat", str(truncated_binlog), *spelling)
    assert done.returncode == 0, done.stderr
    offset = mariadb_binlog_offset(truncated_binlog)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    corrupt = [r for r in rows if r["_corrupt_record"] is not None]
    assert len(corrupt) == 1 and corrupt[0]["pos"] == offset


def test_cat_failfast_stops_at_the_first_bad_region(truncated_binlog: Path) -> None:
    done = cli("cat", str(truncated_binlog), "--mode", "failfast")
    assert done.returncode == 1, done.stderr
    lines = our_lines(done.stderr)
    assert len(lines) == 1 and f"byte {mariadb_binlog_offset(truncated_binlog)}" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_cat_dropmalformed_drops_quietly(truncated_binlog: Path) -> None:
    done = cli("cat", str(truncated_binlog), "--mode", "dropmalformed")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and all("_corrupt_record" not in r for r in rows)


# --- sql errors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("query,error", [("SELEC count(*) FROM x", "PARSE_SYNTAX_ERROR"),
                                         ("SELECT no_such_column FROM x", "UNRESOLVED_COLUMN")])
def test_sql_error_is_one_line(query: str, error: str) -> None:
    done = cli("sql", query, "--view", f"x=tarantool-xlog:{XLOGS}", "--master", "local[1]", timeout=600)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = our_lines(done.stderr)
    assert len(lines) == 1 and error in lines[0], done.stderr[-3000:]
    assert done.stdout == ""


def test_sql_bad_view_is_an_option_error() -> None:
    done = cli("sql", "SELECT 1", "--view", "x", "--master", "local[1]", timeout=600)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = our_lines(done.stderr)
    assert len(lines) == 1 and "--view" in lines[0] and "NAME=FORMAT:PATH" in lines[0], done.stderr[-3000:]


# --- the cli extra ------------------------------------------------------------------------------------------------
BLOCK_YAML = """
import runpy, sys
class NoYaml:
    def find_spec(self, name, path=None, target=None):
        if name == "yaml" or name.startswith("yaml."):
            raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
        return None
sys.meta_path.insert(0, NoYaml())
sys.argv = ["spark-logsource", *sys.argv[1:]]
runpy.run_module("spark_logsource.cli", run_name="__main__")
"""


@pytest.mark.parametrize("args", [("cat", str(BINLOG), "--format", "yaml"),
                                  ("follow", str(XLOGS), "--output", "yaml", "--source", "tarantool-xlog",
                                   "--from", "earliest")])
def test_yaml_without_the_cli_extra_names_the_extra(args: tuple[str, ...]) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_YAML, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'spark-logsource[cli]'" in lines[0], done.stderr
    assert done.stdout == ""
