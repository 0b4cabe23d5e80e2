"""The package's shape, checked from its source: no import cycles, no Spark below ``spark/``.

Module-level imports only: an import inside a function is a deliberate lazy import (a format's optional
dependency, or the registry loading a format on demand) and cannot form an import-time cycle.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "spark_logsource"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _top_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _top_level_imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph = _graph()
    assert len(graph) > 50, "the walk found the package"
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_spark_import_below_readers() -> None:
    """Anywhere in a module, lazy imports included: the core must run where pyspark is not installed."""
    offenders = []
    for name, path in _modules().items():
        if name.startswith("spark_logsource.spark"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            offenders += [f"{name}: {m}" for m in modules if m.split(".")[0] == "pyspark"]
    assert offenders == []


#: The longest a C file of the kernels may be (.c and .h alike): one concern per file.
MAX_C_LINES = 800


def test_no_c_file_over_800_lines() -> None:
    """A kernel is split by concern (values, plans, images, runs, typed rows, the module) into files a reader can
    hold: none over MAX_C_LINES lines."""
    sources = sorted([*PACKAGE.rglob("*.c"), *PACKAGE.rglob("*.h")])
    assert len(sources) > 10, "the walk found the kernels' sources"
    lines = {str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in sources}
    assert {name: n for name, n in lines.items() if n > MAX_C_LINES} == {}


def test_the_package_says_it_is_typed() -> None:
    """``py.typed`` (PEP 561) in the package, and in what setup.py installs and MANIFEST.in puts in the sdist: a
    project that type-checks its calls into spark_logsource gets our annotations, not Any."""
    assert (PACKAGE / "py.typed").is_file()
    setup = ast.parse((PACKAGE.parent / "setup.py").read_text())
    package_data = next(kw.value for node in ast.walk(setup) if isinstance(node, ast.Call)
                        for kw in node.keywords if kw.arg == "package_data")
    assert "py.typed" in ast.literal_eval(package_data).get("spark_logsource", [])
    manifest = (PACKAGE.parent / "MANIFEST.in").read_text().splitlines()
    assert "include spark_logsource/py.typed" in manifest


def test_mypy_is_strict_on_the_package() -> None:
    """pyproject's mypy runs strict over the whole package, and no per-module override loosens a module of ours
    (the overrides are for libraries that ship no types). CI runs mypy itself (scripts/test.sh)."""
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert config["files"] == ["spark_logsource"]
    ours = [o for o in config.get("overrides", [])
            if any(m.split(".")[0] == "spark_logsource" for m in ([o["module"]] if isinstance(o["module"], str)
                                                                     else o["module"]))]
    assert ours == []


def test_imports_inside_the_package_are_absolute() -> None:
    """One import style: ``from spark_logsource.mysql.binlog.events import ...``, never ``from .events import ...``
    (ruff's TID252 keeps it so; this names the offenders)."""
    relative = [f"{name}:{node.lineno}" for name, path in _modules().items()
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == []
