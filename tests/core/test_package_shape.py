"""The package's shape, checked from its source: no import cycles, no Spark below ``spark/``, no module over 600
lines, no package folder over 20 modules, no C file over 800 lines, mypy strict and ``py.typed`` shipped, and the
parts table of docs/ARCHITECTURE.md true of the tree.

Module-level imports only: an import inside a function is a deliberate lazy import (a format's optional
dependency, or the registry loading a format on demand) and cannot form an import-time cycle.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

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


#: The longest a Python module of the package may be: past it, a module holds more than one concern.
MAX_MODULE_LINES = 600
#: The most modules (``.py`` files besides ``__init__.py``) one package folder may hold: past it, the folder wants
#: stage subfolders (docs/ARCHITECTURE.md, "The parts").
MAX_FOLDER_MODULES = 20


def _long_modules(root: Path, limit: int) -> dict[str, int]:
    lines = {str(path.relative_to(root)): len(path.read_text().splitlines()) for path in sorted(root.rglob("*.py"))}
    return {name: n for name, n in lines.items() if n > limit}


def _crowded_folders(root: Path, limit: int) -> dict[str, int]:
    folders = [root, *sorted(p.parent for p in root.rglob("__init__.py") if p.parent != root)]
    counts = {str(folder.relative_to(root.parent)): len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
              for folder in folders}
    return {name: n for name, n in counts.items() if n > limit}


def test_no_module_over_600_lines() -> None:
    """Every module of the package is at most MAX_MODULE_LINES lines; the offenders are named with their length."""
    assert len(list(PACKAGE.rglob("*.py"))) > 50, "the walk found the package"
    assert _long_modules(PACKAGE, MAX_MODULE_LINES) == {}


def test_no_package_folder_over_20_modules() -> None:
    assert _crowded_folders(PACKAGE, MAX_FOLDER_MODULES) == {}


def test_the_size_checks_name_their_offenders(tmp_path: Path) -> None:
    """Seen failing: a module one line over the limit and a folder one module over are named, the ones at the
    limit are not."""
    root = tmp_path / "pkg"
    (root / "big").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "big" / "__init__.py").write_text("x = 1\n" * 30)
    (root / "at_limit.py").write_text("x = 1\n" * 5)
    (root / "over.py").write_text("x = 1\n" * 6)
    for i in range(4):
        (root / "big" / f"m{i}.py").write_text("")
    assert _long_modules(root, 5) == {"over.py": 6, "big/__init__.py": 30}
    assert _crowded_folders(root, 3) == {"pkg/big": 4}
    assert _crowded_folders(root, 4) == {}


def _functions_taking_path(files: list[Path]) -> list[str]:
    """``file:function`` for every function (methods included) of ``files`` with a parameter named ``path``."""
    found = []
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                if any(a.arg == "path" for a in args.posonlyargs + args.args + args.kwonlyargs):
                    found.append(f"{file.name}:{node.name}")
    return found


def test_mysql_decoders_take_no_path() -> None:
    """The MySQL decoders and the kernel's entry points know buffers, not files: they raise the path-free
    BinlogDecodeError and the reader that knows the file adds it (docs/ARCHITECTURE.md)."""
    files = [*sorted((PACKAGE / "mysql" / "decode").glob("*.py")), PACKAGE / "mysql" / "_kernel.pyi"]
    assert len(files) > 5, "the walk found the decoders"
    assert _functions_taking_path(files) == []


def test_the_path_check_names_its_offenders(tmp_path: Path) -> None:
    """Seen failing: a decoder with a ``path`` keyword and a method with a positional one are named, a function
    whose other parameters merely mention paths is not."""
    module = tmp_path / "dec.py"
    module.write_text("def decode(body, *, path, offset): ...\n"
                      "class E:\n    def at(self, path, base): ...\n"
                      "def parse(body, paths, path_len): ...\n")
    assert _functions_taking_path([module]) == ["dec.py:decode", "dec.py:at"]


# --- The parts table of docs/ARCHITECTURE.md, checked against the tree ---

ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
#: A database package with at most this many modules stays flat (one module per part, named for its job); a larger
#: one keeps at its top only its TOP_PARTS, every other part in that part's stage folder.
FLAT_PACKAGE_MODULES = 12
#: The parts that stay at the top of a database package, stage folders or not: they serve several stages
TOP_PARTS = frozenset({"position", "format", "shared"})
_CITED = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class PartsTable:
    databases: list[str]                         # the database packages, in the table's column order
    folders: dict[str, str]                      # part → its stage folder's name ("" for a top part, "*" for framing)
    cells: dict[tuple[str, str], list[str]]      # (part, database) → the paths cited, relative to the package


def _parts_table(text: str) -> PartsTable:
    """The table whose header starts ``| part | stage folder | job |``; the columns after ``job`` are databases."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.replace(" ", "").startswith("|part|stagefolder|job|"))
    header = [c.strip().strip("`").rstrip("/") for c in lines[start].strip().strip("|").split("|")]
    databases = header[3:]
    folders: dict[str, str] = {}
    cells: dict[tuple[str, str], list[str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        part = row[0].strip("*")
        cited = _CITED.findall(row[1])  # none: a top part; several: named per database (the framing's)
        folders[part] = "" if not cited else cited[0].rstrip("/") if len(cited) == 1 else "*"
        for database, cell in zip(databases, row[3:], strict=True):
            cells[(part, database)] = _CITED.findall(cell)
    return PartsTable(databases, folders, cells)


def _database_packages(registry: dict[str, str]) -> set[str]:
    """The packages the registry's formats live in: ``spark_logsource.<db>.format:Class`` → ``<db>``."""
    return {target.split(":")[0].split(".")[1] for target in registry.values()}


def _parts_problems(table: PartsTable, package: Path, registered: set[str]) -> list[str]:
    problems = []
    if set(table.databases) != registered:
        problems.append(f"databases of the table {sorted(table.databases)} != the registry's {sorted(registered)}")
    for database in table.databases:
        root = package / database
        modules = {p.relative_to(package).as_posix() for p in root.rglob("*.py") if p.name != "__init__.py"}
        subfolders = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
        flat = len(modules) <= FLAT_PACKAGE_MODULES
        covered: dict[str, str] = {}
        for (part, db), cited in table.cells.items():
            if db != database:
                continue
            for path in cited:
                if not path.startswith(f"{database}/"):
                    problems.append(f"{part}/{database}: {path} is not in {database}/")
                    continue
                if path.endswith("/"):
                    folder = path.rstrip("/").split("/", 1)[1]
                    if not (package / path / "__init__.py").is_file():
                        problems.append(f"{part}/{database}: {path} is not a package folder")
                    if flat:
                        problems.append(f"{part}/{database}: {path}: a package of {len(modules)} modules stays flat")
                    if part in TOP_PARTS:
                        problems.append(f"{part}/{database}: {path}: the {part} stays at the package's top")
                    elif table.folders[part] not in ("*", folder):
                        problems.append(f"{part}/{database}: {path} should be {database}/{table.folders[part]}/")
                    owned = {m for m in modules if m.startswith(path)}
                else:
                    if not (package / path).is_file():
                        problems.append(f"{part}/{database}: {path} does not exist")
                    elif not flat and part not in TOP_PARTS:
                        problems.append(f"{part}/{database}: {path}: a package of {len(modules)} modules keeps its "
                                        f"{part} in its stage folder")
                    owned = {path}
                for module in owned:
                    if module in covered:
                        problems.append(f"{module}: in both {covered[module]} and {part}")
                    covered[module] = part
        problems += [f"{module}: in no part of the table" for module in sorted(modules - set(covered))]
        cited_folders = {path.rstrip("/").split("/", 1)[1] for (_, db), cited in table.cells.items() if db == database
                         for path in cited if path.endswith("/")}
        problems += [f"{database}/{folder}/: a folder the table does not name" for folder in
                     sorted(subfolders - cited_folders)]
    return problems


def _registry() -> dict[str, str]:
    tree = ast.parse((PACKAGE / "registry.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                and n.target.id == "FORMATS")
    assert node.value is not None
    formats: dict[str, str] = ast.literal_eval(node.value)
    return formats


def test_the_parts_table_is_the_tree() -> None:
    """docs/ARCHITECTURE.md's parts table, read as data: every database of the registry has a column; every path
    it cites exists; a stage folder has its part's name (the framing's is named after the log); a small package is
    flat, a large one keeps only its TOP_PARTS at its top; every module of a database package is in exactly one
    part, and every stage folder is in the table."""
    table = _parts_table(ARCHITECTURE.read_text())
    assert len(table.databases) >= 4 and {"framing", "decoding", "position", "format"} <= set(table.folders)
    assert _parts_problems(table, PACKAGE, _database_packages(_registry())) == []


def test_the_parts_check_finds_a_tree_that_left_the_table(tmp_path: Path) -> None:
    """Seen failing: on a copy of the package where a module moved out of its stage folder, a stage folder was
    renamed, and a new module went nowhere, each is named."""
    package = tmp_path / "spark_logsource"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.c", "*.h"))
    (package / "mysql" / "binlog" / "fde.py").rename(package / "mysql" / "fde.py")
    (package / "tarantool" / "decode").rename(package / "tarantool" / "decoding")
    (package / "yugabyte" / "wal_index.py").write_text("")
    table = _parts_table(ARCHITECTURE.read_text())
    problems = _parts_problems(table, package, _database_packages(_registry()) | {"newdb"})
    assert "mysql/fde.py: in no part of the table" in problems
    assert "decoding/tarantool: tarantool/decode/ is not a package folder" in problems
    assert "tarantool/decoding/: a folder the table does not name" in problems
    assert "yugabyte/wal_index.py: in no part of the table" in problems
    assert any(p.startswith("databases of the table") for p in problems)


def _check_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs", PACKAGE.parent / "scripts" / "check_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_map_names_files_that_exist() -> None:
    """Every path docs/ARCHITECTURE.md and CONTRIBUTING.md cite in backquotes exists, bare file names (``rows.py``,
    ``_kernel_values.c``) included, and none is a retired module name (``scripts/check_docs.py``)."""
    checker = _check_docs()
    for doc in (ARCHITECTURE, PACKAGE.parent / "CONTRIBUTING.md"):
        assert len(_CITED.findall(doc.read_text())) > 50, f"{doc.name} cites modules"
        assert list(checker.dangling(doc)) == [], doc.name


def test_the_map_check_finds_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen failing: a map citing a bare file that is nowhere, a moved module and a retired name."""
    checker = _check_docs()
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text("`rows.py`, `no_such_part.c`\n`mysql/events.py` and `typed_rows.scan_files`\n")
    monkeypatch.setattr(checker, "OWN_FILES_ONLY", (str(doc),))
    monkeypatch.setattr(checker, "REPO", PACKAGE.parent)
    assert list(checker.dangling(doc)) == [(1, "no_such_part.c"), (2, "mysql/events.py"),
                                          (2, "typed_rows.scan_files")]
