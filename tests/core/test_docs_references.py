"""The documentation names files that exist (``scripts/check_docs.py``, run by ``make docs``): relative links, and
the paths of ours it cites in backquotes, such as ``mysql/binlog/events.py``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_docs.py"


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_name_files_that_exist() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 dangling references" in done.stderr


def test_the_check_finds_a_dangling_reference(tmp_path: Path) -> None:
    """A link to a missing file and a cited module that does not exist are both reported, with their lines; a
    repository name (``tarantool/tarantool``), a web link and a file that exists are not."""
    doc = tmp_path / "page.md"
    doc.write_text("see [streaming](missing.md) and [the site](https://example.org/x.md)\n"
                   "the framer is `mysql/binlog/events.py`, the decoder `mysql/no_such_module.py`\n"
                   "upstream: `tarantool/tarantool`, `spark_logsource/nowhere/`\n")
    assert list(_checker().dangling(doc)) == [(1, "missing.md"), (2, "mysql/no_such_module.py"),
                                              (3, "spark_logsource/nowhere/")]
