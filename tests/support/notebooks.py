"""Notebooks as cells: Databricks source files (``.py``) and their Jupyter twins (``.ipynb``).

A Databricks source notebook starts with ``# Databricks notebook source``; cells are separated by
``# COMMAND ----------``; a cell made of ``# MAGIC`` lines is a magic cell (``%md`` markdown, ``%pip`` ...).
:func:`to_ipynb` makes the Jupyter twin (markdown cells for ``%md``, ``%pip`` lines kept as code-cell magics), so
the two stay the same notebook: ``python -m tests.support.notebooks`` rewrites every ``notebooks/*.ipynb``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.oracle.mariadb_binlog import run_oracle
from tests.support.oracle.mariadb_events import run_mariadb_binlog
from tests.support.oracle.tarantool_xlog import dump_file, expected_row

HEADER = "# Databricks notebook source"
SEPARATOR = "# COMMAND ----------"
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@dataclass(frozen=True)
class Cell:
    kind: str  # "code", "markdown" or "magic" (a %pip-like line that only a notebook runtime runs)
    source: str


def databricks_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("*.py") if p.read_text().startswith(HEADER))


def parse_databricks(text: str) -> list[Cell]:
    if not text.startswith(HEADER):
        raise ValueError("not a Databricks source notebook")
    cells = []
    for chunk in text[len(HEADER):].split(SEPARATOR):
        lines = chunk.strip("\n").splitlines()
        if not lines:
            continue
        if all(line.startswith("# MAGIC") for line in lines):
            body = [line[len("# MAGIC "):] if line.startswith("# MAGIC ") else "" for line in lines]
            if body[0].startswith("%md"):
                body[0] = body[0][len("%md"):].lstrip()
                cells.append(Cell("markdown", "\n".join(line for line in body).strip("\n")))
            else:
                cells.append(Cell("magic", "\n".join(body)))
        else:
            cells.append(Cell("code", "\n".join(lines)))
    return cells


def to_ipynb(cells: list[Cell]) -> dict[str, Any]:
    def source(text: str) -> list[str]:
        lines = text.split("\n")
        return [line + "\n" for line in lines[:-1]] + [lines[-1]]

    out = []
    for cell in cells:
        if cell.kind == "markdown":
            out.append({"cell_type": "markdown", "metadata": {}, "source": source(cell.source)})
        else:
            out.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                        "source": source(cell.source)})
    return {"cells": out, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                      "name": "python3"},
                                       "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def ipynb_text(cells: list[Cell]) -> str:
    return json.dumps(to_ipynb(cells), indent=1, ensure_ascii=False) + "\n"


def parse_ipynb(text: str) -> list[Cell]:
    """Code cells of a Jupyter notebook (lines starting with ``%`` are magics), markdown cells kept."""
    cells = []
    for cell in json.loads(text)["cells"]:
        body = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            cells.append(Cell("markdown", body))
        elif body.lstrip().startswith("%"):
            cells.append(Cell("magic", body))
        else:
            cells.append(Cell("code", body))
    return cells


# -- what the databases' own readers say about the samples (the notebooks' cells are checked against these) ------
def tarantool_rows(wal_dir: Path, suffix: str = ".xlog") -> list[dict[str, Any]]:
    """Every row of the ``suffix`` files of ``wal_dir`` as Tarantool's ``xlog.pairs()`` reads them: our columns'
    expected values (``lsn``, ``type``, ``space_id``, ``tsn``, ``tuple``, ``key``, ``ops``, ``timestamp`` in
    microseconds, ...) plus ``file``."""
    rows = []
    for path in sorted(wal_dir.glob(f"*{suffix}")):
        dump = dump_file(path)
        assert dump.error is None, f"xlog.pairs() stopped in {path}: {dump.error}"
        rows += [{**expected_row(row).columns, "file": str(path)} for row in dump.rows]
    return rows


def mariadb_rows(path: Path) -> list[dict[str, Any]]:
    """Every row change of a binlog as ``mariadb-binlog -vv`` prints it: ``db``, ``table``, ``op`` and the printed
    ``before`` / ``after`` values by column number (``"@1"``: the text, None for NULL; strings keep their quotes)."""
    out = []
    for key in sorted(run_oracle_cached(path)):
        row = run_oracle_cached(path)[key]
        out.append({"db": row.db, "table": row.table, "op": row.op,
                    "before": {k: None if v.is_null else v.text for k, v in row.before.items()},
                    "after": {k: None if v.is_null else v.text for k, v in row.after.items()}})
    return out


_ORACLE_CACHE: dict[Path, Any] = {}


def run_oracle_cached(path: Path) -> Any:
    """:func:`run_oracle`, once per file for the test session."""
    if path not in _ORACLE_CACHE:
        _ORACLE_CACHE[path] = run_oracle(path)
    return _ORACLE_CACHE[path]


def mariadb_statements(path: Path) -> list[str]:
    """The statements mariadb-binlog prints for the ANNOTATE_ROWS events (``#Q>`` lines), in log order."""
    run = run_mariadb_binlog(path)
    assert run.returncode == 0, run.stderr
    return [line[len("#Q> "):] for event in run.events for line in event.lines if line.startswith("#Q> ")]


def mariadb_event_positions(path: Path) -> list[int]:
    """The start position of every event of a binlog, as mariadb-binlog prints them (``# at N``)."""
    run = run_mariadb_binlog(path)
    assert run.returncode == 0, run.stderr
    return [event.pos for event in run.events]


def unquote(text: str | None) -> str | None:
    """A string value as mariadb-binlog prints it (``'note 3'``) → the string."""
    if text is None:
        return None
    assert text.startswith("'") and text.endswith("'"), text
    return text[1:-1]


def main() -> int:
    for path in databricks_notebooks():
        target = path.with_suffix(".ipynb")
        target.write_text(ipynb_text(parse_databricks(path.read_text())))
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
