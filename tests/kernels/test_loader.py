"""The one switch between the compiled kernels and the Python references, and what C and Python must share."""

from __future__ import annotations

import logging

import pytest

from spark_logsource import native
from spark_logsource.mysql.encode import images as rows_encode


def test_pure_python_switch_bypasses_a_built_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    assert native.load_kernel("spark_logsource.mysql._kernel") is None
    assert rows_encode.rows_encoder() is rows_encode.encode_rows_event_py


def test_missing_kernel_warns_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(native.PURE_PYTHON_ENV, raising=False)
    monkeypatch.setattr(native, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="spark_logsource.native"):
        assert native.load_kernel("spark_logsource.no_such_kernel") is None
        assert native.load_kernel("spark_logsource.no_such_kernel") is None
    warnings = [r for r in caplog.records if "no_such_kernel" in r.getMessage()]
    assert len(warnings) == 1 and "pure Python" in warnings[0].getMessage()


def test_chosen_pure_python_does_not_warn(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    monkeypatch.setattr(native, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="spark_logsource.native"):
        native.load_kernel("spark_logsource.no_such_kernel")
    assert not caplog.records


@pytest.mark.parametrize(("module", "prefixes", "count"), [
    ("encode.images", ("K_", "CS_"), 21),  # the plan compiler: value kinds and charsets of _kernel.c
    ("table.kernel", ("S_", "T_"), 26),  # view=table's conversions: enum tk_source / tk_target of _typed.h
])
def test_mysql_kernel_constants_match_python(module: str, prefixes: tuple[str, ...], count: int) -> None:
    """The numbers the Python side speaks to the MySQL kernel are the ones the kernel exports."""
    import importlib

    python = importlib.import_module(f"spark_logsource.mysql.{module}")
    kernel = native.import_kernel("spark_logsource.mysql._kernel")
    if kernel is None:
        pytest.fail("the MySQL kernel is not built: pip install -e . with a C compiler")
    names = [n for n in dir(python) if n.startswith(prefixes) and n.isupper()]
    assert len(names) == count
    assert {n: getattr(kernel, n) for n in names} == {n: getattr(python, n) for n in names}


@pytest.mark.parametrize("module", ["spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames",
                                    "spark_logsource.mysql._kernel", "spark_logsource.memcached._kernel",
                                    "spark_logsource.yugabyte._kernel"])
def test_stub_names_every_function_of_the_kernel(module: str) -> None:
    """The .pyi stub beside each kernel declares exactly the names the compiled module exports."""
    import ast
    import importlib.util
    from pathlib import Path

    kernel = native.import_kernel(module)
    if kernel is None:
        pytest.fail(f"{module} is not built")
    spec = importlib.util.find_spec(module.rsplit(".", 1)[0])
    assert spec is not None and spec.submodule_search_locations
    stub = Path(next(iter(spec.submodule_search_locations))) / (module.rsplit(".", 1)[1] + ".pyi")
    tree = ast.parse(stub.read_text())
    declared = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    declared |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    exported = {n for n in dir(kernel) if not n.startswith("__")}
    assert declared == exported


def test_each_kernel_is_looked_for_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader imports a kernel once per process: a decoder asking per call (a column builder per file) costs
    a dictionary lookup, not an import attempt, even where the kernel is not built."""
    import importlib

    monkeypatch.setenv(native.PURE_PYTHON_ENV, "0")
    monkeypatch.setattr(native, "_warned", set())
    looked_for: list[str] = []
    real_import = importlib.import_module

    def counting_import(name: str, package: str | None = None) -> object:
        looked_for.append(name)
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", counting_import)
    for _ in range(3):
        assert native.load_kernel("spark_logsource.no_such_kernel_looked_for_once") is None
        assert native.import_kernel("spark_logsource.no_such_kernel_looked_for_once") is None
    assert looked_for == ["spark_logsource.no_such_kernel_looked_for_once"]
