"""Check that the documentation points at things that exist (``make docs``).

In README.md, CONTRIBUTING.md, docs/ and benchmarks/README.md: every relative Markdown link names a file of the
repository, and every file path in backquotes that names a place of ours (``spark_logsource/...``, ``tests/...``, or
a package folder such as ``mysql/binlog/events.py``, which the docs cite relative to ``spark_logsource/``) exists. Bare
file names (``events.py``) are not checked: the docs also cite the databases' and pyspark's own files that way; nor
is ``owner/name`` without a file suffix, another project's repository (``tarantool/tarantool``), nor a placeholder
(``spark_logsource/<db>/``). Prints each dangling reference as ``doc:line: target``; exits 1 when there is one.
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

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*-]+)+/?)`")


def documents() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "benchmarks" / "README.md",
            *sorted((REPO / "docs").rglob("*.md"))]


def _exists(path: Path) -> bool:
    return any(path.parent.glob(path.name)) if "*" in path.name else path.exists()


def dangling(doc: Path) -> Iterator[tuple[int, str]]:
    """``(line, target)`` for each reference of ``doc`` that names nothing."""
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
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


def main() -> int:
    problems = [f"{doc.relative_to(REPO)}:{number}: {target}" for doc in documents()
                for number, target in dangling(doc)]
    for problem in problems:
        print(problem)
    print(f"check_docs: {len(documents())} documents, {len(problems)} dangling references", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
