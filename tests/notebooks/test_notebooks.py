"""Every notebook runs on the shipped samples, cell by cell, with ``spark`` and ``display`` from this harness.

Databricks source notebooks (``notebooks/*.py``) are executed; their Jupyter twins (``.ipynb``) must hold the same
cells (regenerate them with ``python -m tests.support.notebooks``). Checks: every code cell runs, every
DataFrame handed to ``display`` has rows, and every ``savefig`` wrote a PNG.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.notebooks import databricks_notebooks, ipynb_text, parse_databricks, parse_ipynb

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NOTEBOOKS = databricks_notebooks()


def test_there_are_notebooks_in_both_formats():
    assert {p.stem for p in NOTEBOOKS} >= {"replication_logs", "typed_spaces"}
    for path in NOTEBOOKS:
        assert path.with_suffix(".ipynb").is_file(), f"{path.name} has no .ipynb twin"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_twin_has_the_same_cells(path):
    cells = parse_databricks(path.read_text())
    twin = path.with_suffix(".ipynb").read_text()
    assert twin == ipynb_text(cells), "stale .ipynb: run python -m tests.support.notebooks"
    assert [c.source for c in parse_ipynb(twin) if c.kind == "code"] == [c.source for c in cells if c.kind == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_samples(spark, path, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_LOGSOURCE_SAMPLES", str(REPO / "samples"))
    monkeypatch.setenv("SPARK_LOGSOURCE_OUTPUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(REPO / "notebooks")
    shown: list[tuple[int, object]] = []
    cell_index = [0]

    def display(obj):
        if hasattr(obj, "collect"):
            rows = obj.limit(1000).collect()
            assert rows, f"cell {cell_index[0]}: display() of an empty DataFrame"
            shown.append((cell_index[0], rows))
        else:
            shown.append((cell_index[0], obj))

    namespace = {"spark": spark, "display": display, "__name__": "__main__"}
    cells = [c for c in parse_databricks(path.read_text()) if c.kind == "code"]
    assert len(cells) >= 5
    for i, cell in enumerate(cells):
        cell_index[0] = i
        exec(compile(cell.source, f"{path.name}[cell {i}]", "exec"), namespace)
    assert len(shown) >= 4
    saves = sum(c.source.count(".savefig(") for c in cells)
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) == saves
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, png
    import matplotlib.pyplot as plt

    plt.close("all")
