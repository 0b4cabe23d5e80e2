"""Check that the documentation points at things that exist (``make docs``).

In README.md, CONTRIBUTING.md, docs/ and benchmarks/README.md: every relative Markdown link names a file of the
repository, and every file path in backquotes that names a place of ours (``spark_logsource/...``, ``tests/...``, or
a package folder such as ``mysql/binlog/events.py``, which the docs cite relative to ``spark_logsource/``) exists. Bare
file names (``events.py``) are not checked: the docs also cite the databases' and pyspark's own files that way; nor
is ``owner/name`` without a file suffix, another project's repository (``tarantool/tarantool``), nor a placeholder
(``spark_logsource/<db>/``), except in the pages that cite only our files (:data:`OWN_FILES_ONLY`: the map and the
contributors' guide), where a bare ``name.py`` / ``.c`` / ``.h`` / ``.pyi`` must be a file of the repository.

Two kinds of stale names are dangling too: a dotted ``spark_logsource.x.y`` whose modules do not exist (or whose
first name past the last package is not in that package's ``__init__.py``), and a name the package no longer has
(:data:`RETIRED`, the modules renamed when the tree took its stage folders) cited as a module: ``typed_rows.py``,
``typed_rows.scan_files``, ``mysql/typed_rows``, ``readers/``. A function of the same name (``_kernel.typed_rows``)
is not a module and is not reported. Notebooks' sources (``notebooks/*.py``) are searched for both.

Prints each dangling reference as ``doc:line: target``; exits 1 when there is one.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "spark_logsource"
#: The folders a path in backquotes may start with: the repository's, then the package's (cited without the prefix)
REPO_DIRS = ("spark_logsource", "tests", "scripts", "benchmarks", "docs", "notebooks", "samples")
PACKAGE_DIRS = tuple(sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")))

#: Pages that cite only files of ours, so a bare file name there must exist somewhere in the repository
OWN_FILES_ONLY = ("docs/ARCHITECTURE.md", "CONTRIBUTING.md")
#: Module and folder names the package had before its stage folders, cited nowhere since (what replaced each:
#: docs/ARCHITECTURE.md, "The shape")
RETIRED = frozenset({"arrowcols", "event_filters", "read_options", "readers", "rows_encode", "rows_run",
                     "stream_options", "table_options", "table_schema", "typed_batch", "typed_kernel", "typed_rows",
                     "typed_views"})
#: The database packages, which a retired name may follow (``mysql/typed_rows.py``)
_DATABASES = ("mysql", "tarantool", "yugabyte", "memcached")

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*-]+)+/?)`")
_BARE_FILE = re.compile(r"`([A-Za-z0-9_-]+\.(?:py|pyi|c|h))`")
_DOTTED = re.compile(r"`(spark_logsource(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_CODE = re.compile(r"`([^`\s]+)`")
_DATABASE_PREFIX = "|".join(_DATABASES)
_RETIRED_NAME = "|".join(sorted(RETIRED))
_RETIRED_AS_MODULE = re.compile(rf"(?:spark_logsource[./])?(?:(?:{_DATABASE_PREFIX})[./])?({_RETIRED_NAME})"
                                r"(?:\.py|[./][A-Za-z_]|/$)")


def documents() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "benchmarks" / "README.md",
            *sorted((REPO / "docs").rglob("*.md"))]


def notebooks() -> list[Path]:
    """The notebooks' sources: their Markdown cells cite modules too (checked for stale names only)."""
    return sorted((REPO / "notebooks").glob("*.py"))


def _own_file_names() -> set[str]:
    return {path.name for folder in REPO_DIRS if (REPO / folder).is_dir() for path in (REPO / folder).rglob("*")
            if path.is_file()} | {path.name for path in REPO.iterdir() if path.is_file()}


def _dotted_exists(dotted: str) -> bool:
    """``spark_logsource.a.b.name``: each name a package (a folder), then a module, or a name its package's
    ``__init__.py`` defines or imports; what follows a module (its attributes) is not checked."""
    here = REPO
    for name in dotted.split("."):
        if (here / name).is_dir():
            here = here / name
        elif (here / f"{name}.py").is_file():
            return True
        else:
            init = here / "__init__.py"
            return init.is_file() and re.search(rf"\b{re.escape(name)}\b", init.read_text(encoding="utf-8")) is not None
    return True


def stale_names(text: str) -> Iterator[tuple[int, str]]:
    """``(line, target)`` for each module of ours cited under a name the package does not have."""
    for number, line in enumerate(text.splitlines(), start=1):
        for target in _CODE.findall(line):
            if _RETIRED_AS_MODULE.match(target):
                yield number, target
        for target in _DOTTED.findall(line):
            if not _dotted_exists(target):
                yield number, target


def _exists(path: Path) -> bool:
    return any(path.parent.glob(path.name)) if "*" in path.name else path.exists()


def dangling(doc: Path) -> Iterator[tuple[int, str]]:
    """``(line, target)`` for each reference of ``doc`` that names nothing, or names a module by a retired name;
    each once per line, in line order."""
    found = list(dict.fromkeys(_dangling(doc)))
    yield from sorted(found, key=lambda item: item[0])


def _dangling(doc: Path) -> Iterator[tuple[int, str]]:
    text = doc.read_text(encoding="utf-8")
    own_only = any(doc.resolve() == REPO / name for name in OWN_FILES_ONLY)
    own_names = _own_file_names() if own_only else set()
    for number, line in enumerate(text.splitlines(), start=1):
        for target in _LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... : not a file of ours
                continue
            path = target.split("#", 1)[0]
            if path and not (doc.parent / path).exists():
                yield number, target
        for target in _CODE_PATH.findall(line):
            head = target.split("/", 1)[0]
            if head in REPO_DIRS:
                candidate = REPO / target
            elif head in PACKAGE_DIRS and (target.endswith("/") or "." in target.rsplit("/", 1)[1]):
                candidate = PACKAGE / target  # a file or a folder/ (``tarantool/tarantool`` is a repository)
            else:
                continue  # another project's path (pyspark/sql/..., mysql-server's libs/...)
            if not _exists(candidate):
                yield number, target
        if own_only:
            for target in _BARE_FILE.findall(line):
                if target not in own_names:
                    yield number, target
    yield from stale_names(text)


def main() -> int:
    problems = [f"{doc.relative_to(REPO)}:{number}: {target}" for doc in documents()
                for number, target in dangling(doc)]
    problems += [f"{source.relative_to(REPO)}:{number}: {target}" for source in notebooks()
                 for number, target in stale_names(source.read_text(encoding="utf-8"))]
    for problem in problems:
        print(problem)
    print(f"check_docs: {len(documents())} documents, {len(problems)} dangling references", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
