"""The twin harness is the only way tests choose between a kernel and its reference (``tests/support/twins.py``).

A rule over the test sources: outside the harness and the tests of the switch itself, no test module imports a
compiled module or ``spark_logsource.native``, reaches a kernel through a decoder's private attribute, sets
``SPARK_LOGSOURCE_PURE_PYTHON`` or passes ``use_kernel=``; tests take the ``twin`` fixture, or ``compiled`` /
``activate`` when they compare both twins themselves. And the harness knows every place a decoder binds a kernel,
so the "python" twin leaves none bound.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import pytest

import spark_logsource
from tests.support.twins import ALWAYS_BOUND, BOUND_AT_IMPORT, KERNELS, activate, compiled

TESTS = Path(__file__).resolve().parent.parent
#: Files the rule does not apply to, and why.
EXEMPT = {
    "support/twins.py": "the harness itself",
    "conftest.py": "the twin fixture, and the pure-Python pass leaving out the tests over it",
    "kernels/test_loader.py": "tests the switch (load_kernel, the variable) and the kernels' exports",
    "kernels/test_twins.py": "this rule (its examples of what it refuses are strings)",
    "core/test_install.py": "installs the wheel and sdist in fresh venvs and sets the variable for a child process",
}
KERNEL_NAMES = frozenset({"_kernel", "_frames"})
PRIVATE_KERNEL_ATTRIBUTES = frozenset({"_kernel", "_KERNEL", "_frames"})


def violations(source: str, where: str) -> list[str]:
    """What in ``source`` chooses a twin outside the harness, as ``where:line: what``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        what = None
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            if any(n == "spark_logsource.native" or n.rsplit(".", 1)[-1] in KERNEL_NAMES for n in names):
                what = f"import {', '.join(names)}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spark_logsource"):
            module, names = node.module or "", [a.name for a in node.names]
            if (module == "spark_logsource.native" or module.rsplit(".", 1)[-1] in KERNEL_NAMES
                    or (module == "spark_logsource" and "native" in names) or KERNEL_NAMES & set(names)):
                what = f"from {module} import {', '.join(names)}"
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_KERNEL_ATTRIBUTES:
            what = f"a kernel through .{node.attr}"
        elif isinstance(node, ast.Constant) and node.value == "SPARK_LOGSOURCE_PURE_PYTHON":
            what = "the variable SPARK_LOGSOURCE_PURE_PYTHON"
        elif isinstance(node, ast.keyword) and node.arg == "use_kernel":
            what = "use_kernel="
        if what:
            found.append(f"{where}:{getattr(node, 'lineno', '?')}: {what}")
    return found


def test_tests_choose_twins_only_through_the_harness() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS).as_posix()
        if name not in EXEMPT:
            found += violations(path.read_text(), f"tests/{name}")
    assert not found, ("take the twin fixture (or compiled / activate of tests/support/twins.py for a test "
                       "comparing both twins) instead of:\n" + "\n".join(found))


@pytest.mark.parametrize("source", [
    "from spark_logsource.tarantool import _kernel",
    "from spark_logsource.tarantool._kernel import decode_payload",
    "import spark_logsource.memcached._kernel",
    "from spark_logsource.tarantool import client, _frames",
    "from spark_logsource.native import PURE_PYTHON_ENV",
    "from spark_logsource import native",
    "import spark_logsource.native",
    "kernel = typed_kernel._kernel",
    "assert tap._KERNEL is not None",
    "assert client._frames",
    "monkeypatch.setenv('SPARK_LOGSOURCE_PURE_PYTHON', '1')",
    "os.environ['SPARK_LOGSOURCE_PURE_PYTHON'] = '1'",
    "decode_bulk(data, starts, use_kernel=False)",
])
def test_the_rule_refuses(source: str) -> None:
    assert len(violations(source, "x.py")) == 1


def test_the_rule_lets_the_harness_and_docstrings_be() -> None:
    source = ('"""Run with SPARK_LOGSOURCE_PURE_PYTHON=1, or not."""\n'
              "from spark_logsource.mysql import typed_kernel, rows_encode\n"
              "from tests.support.twins import Twin, activate, compiled\n"
              "kernel = compiled('spark_logsource.mysql._kernel')\n")
    assert violations(source, "x.py") == []


def _kernel_bindings() -> set[tuple[str, str]]:
    """(module, attribute) of every attribute of a package module holding a kernel or one of its functions."""
    kernels = {importlib.import_module(name) for name in KERNELS}
    found = set()
    for info in pkgutil.walk_packages(spark_logsource.__path__, "spark_logsource."):
        if info.name.endswith("__main__") or info.name in KERNELS:
            continue  # __main__ runs the CLI when imported
        module = importlib.import_module(info.name)
        for attribute, value in vars(module).items():
            held = value if isinstance(value, types.ModuleType) else getattr(value, "__self__", None)
            if held in kernels and f"{info.name}.{attribute}" != getattr(held, "__name__", None):
                found.add((info.name, attribute))  # (a package's own submodule attribute is not a choice)
    return found


def test_the_harness_knows_where_kernels_are_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every module attribute holding a kernel is one the harness sets per twin, or one used only after asking the
    switch; under the "python" twin only the latter still hold one."""
    activate("c", monkeypatch)
    bound = _kernel_bindings()
    known = {(module, attribute) for module, attribute, _choose in BOUND_AT_IMPORT} | set(ALWAYS_BOUND)
    assert bound <= known, f"bound at import and unknown to tests/support/twins.py: {sorted(bound - known)}"
    assert set(ALWAYS_BOUND) <= bound
    activate("python", monkeypatch)
    assert _kernel_bindings() == set(ALWAYS_BOUND)


def test_the_c_twin_is_skipped_with_the_reason_where_a_kernel_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_logsource import native

    real = native.import_kernel
    monkeypatch.setattr(native, "import_kernel",
                        lambda module: None if module == "spark_logsource.memcached._kernel" else real(module))
    with pytest.raises(pytest.skip.Exception, match=r"C twin is not built \(spark_logsource\.memcached\._kernel\)"):
        activate("c", monkeypatch)
    with pytest.raises(pytest.skip.Exception, match=r"spark_logsource\.memcached\._kernel is not built"):
        compiled("spark_logsource.memcached._kernel")
    assert activate("python", monkeypatch).name == "python"
