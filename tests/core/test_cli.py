"""``spark-logsource cat`` against ``tarantoolctl cat`` (the server's own tool), and ``sql`` on the shipped samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import spark_logsource
from spark_logsource.cli import main

REPO = Path(__file__).resolve().parents[2]


def run_cat(capsys, *args: str) -> list[dict]:
    assert main(["cat", *args]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines()]


def tarantoolctl_cat(files: list[Path], *args: str) -> list[dict]:
    out = subprocess.run(["tarantoolctl", "cat", *map(str, files), "--format=json", *args],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


FILTERS = [
    ("--space", "512"),
    ("--space", "512", "--from", "10", "--to", "30"),
    ("--replica", "1", "--from", "3"),
    ("--space", "512", "--space", "513", "--to", "40"),
]


@pytest.mark.parametrize("args", FILTERS, ids=" ".join)
def test_cat_selects_what_tarantoolctl_cat_selects(capsys, tarantool_workloads, args) -> None:
    work = tarantool_workloads["dml"]
    xlogs = work.files_of(".xlog")
    # tarantoolctl hides system spaces unless a space is named; ask for them so both sides see the same rows
    extra = () if "--space" in args else ("--show-system",)
    want = [(r["HEADER"]["lsn"], r["HEADER"]["type"], r["BODY"].get("space_id"))
            for r in tarantoolctl_cat(xlogs, *args, *extra)]
    got = [(r["lsn"], r["type"], r["space_id"]) for r in run_cat(capsys, *map(str, xlogs), *args)]
    assert got == want
    assert want, f"the dml workload has rows for {args}"


def test_cat_values_equal_tarantoolctl_values(capsys, tarantool_workloads) -> None:
    xlogs = tarantool_workloads["dml"].files_of(".xlog")
    want = tarantoolctl_cat(xlogs, "--space", "512")
    got = run_cat(capsys, *map(str, xlogs), "--space", "512")
    assert len(got) == len(want)
    for ours, theirs in zip(got, want, strict=True):
        body = theirs["BODY"]
        if ours["type"] == "UPDATE":
            assert ours["ops"] == body["tuple"] and ours["key"] == body["key"]
        elif ours["type"] == "UPSERT":
            assert ours["tuple"] == body["tuple"] and ours["ops"] == body["operations"]
        else:
            assert ours["tuple"] == body.get("tuple") and ours["key"] == body.get("key")


def test_cat_yaml_documents_equal_json_lines(capsys, tarantool_workloads) -> None:
    directory = str(tarantool_workloads["dml"].directory)
    as_json = run_cat(capsys, directory, "--space", "512")
    assert main(["cat", directory, "--space", "512", "--format", "yaml"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["lsn"] for d in docs] == [r["lsn"] for r in as_json]
    assert [d["tuple"] for d in docs] == [r["tuple"] for r in as_json]


def test_cat_reads_directories_like_the_arrow_api(capsys, tarantool_workloads) -> None:
    directory = tarantool_workloads["txn"].directory
    rows = run_cat(capsys, str(directory))
    table = spark_logsource.read("tarantool-xlog", str(directory))
    assert [(r["file"], r["offset"], r["lsn"]) for r in rows] == list(zip(
        table.column("file").to_pylist(), table.column("offset").to_pylist(), table.column("lsn").to_pylist(),
        strict=True))


def test_cat_error_names_the_problem(capsys, tmp_path) -> None:
    assert main(["cat", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("columnar", [False, True], ids=["data-source", "columnar"])
def test_sql_main_job_on_shipped_samples(columnar: bool) -> None:
    """The README's main job: a Spark SQL query over samples/tarantool (written by a real Tarantool); with
    ``--columnar``, the same through the columnar JVM reader."""
    from spark_logsource.spark.columnar import arrow_pipe_jar

    if columnar and arrow_pipe_jar() is None:
        pytest.fail("jars/arrow-pipe.jar is not built: scripts/setup.sh builds it")
    samples = REPO / "samples" / "tarantool"
    assert any(samples.glob("*/*.xlog")), "samples/tarantool ships xlogs made by samples/make_tarantool_samples.sh"
    query = "SELECT type, count(*) AS n FROM xlog WHERE file_type = 'XLOG' GROUP BY type ORDER BY type"
    out = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "sql", query, "--format", "json",
                          "--view", f"xlog=tarantool-xlog:{samples}", "--option", "xlog.recursiveFileLookup=true",
                          "--master", "local[1]", *(["--columnar"] if columnar else [])],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = {r["type"]: r["n"] for r in map(json.loads, out.stdout.splitlines())}
    table = spark_logsource.read("tarantool-xlog", str(samples), recursiveFileLookup=True)
    want: dict[str, int] = {}
    for kind, ftype in zip(table.column("type").to_pylist(), table.column("file_type").to_pylist(), strict=True):
        if ftype == "XLOG":
            want[kind] = want.get(kind, 0) + 1
    assert got == want and sum(got.values()) > 0
    if columnar:  # and it was the columnar reader that read them
        plan = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "sql", f"EXPLAIN {query}", "--format",
                               "json", "--view", f"xlog=tarantool-xlog:{samples}", "--option",
                               "xlog.recursiveFileLookup=true", "--master", "local[1]", "--columnar"],
                              capture_output=True, text=True, timeout=600)
        assert plan.returncode == 0, plan.stderr[-3000:]
        assert "logsource-arrow-pipe" in plan.stdout


def test_cat_output_is_valid_utf8_json_even_for_invalid_utf8_strings(tarantool_workloads) -> None:
    """The types workload stores an MP_STR that is not valid UTF-8 (Tarantool does not check)."""
    directory = str(tarantool_workloads["types"].directory)
    out = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "cat", directory, "--space", "512"],
                         capture_output=True, timeout=300, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    lines = out.stdout.decode("utf-8").splitlines()  # strict: raises on invalid UTF-8
    rows = [json.loads(line) for line in lines]
    assert len(rows) == spark_logsource.read("tarantool-xlog", directory, spaceId=512).num_rows > 0
    assert any("\udcff" in json.dumps(r["tuple"], ensure_ascii=False) or "\\udc" in line
               for r, line in zip(rows, lines, strict=True)), "the invalid string survives as a JSON escape"


def test_cat_rejects_an_option_without_a_value(capsys, tarantool_workloads) -> None:
    assert main(["cat", str(tarantool_workloads["dml"].directory), "--option", "batchSize"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_the_parser_does_not_import_the_heavy_libraries() -> None:
    """Building the command line (every format's flags) imports neither pandas, sqlglot nor pyspark: ``--help`` and
    a mistyped flag answer without their start-up."""
    code = ("import sys\nfrom spark_logsource.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('pandas', 'sqlglot', 'pyspark', 'py4j') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout


def test_cat_of_a_directory_of_sub_directories_warns_they_were_not_searched() -> None:
    # The repo's own samples/tarantool holds one directory per workload and no file at its top.
    out = subprocess.run([sys.executable, "-m", "spark_logsource.cli", "cat", "samples/tarantool"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert "samples/tarantool" in out.stderr and "recursiveFileLookup=true" in out.stderr and "dml" in out.stderr
