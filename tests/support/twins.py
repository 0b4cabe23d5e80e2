"""The twin harness: every decoder test runs on the compiled kernel ("c") and on its pure-Python reference ("python").

``tests/conftest.py`` turns :func:`activate` into the ``twin`` fixture, parametrized over :data:`TWINS` (test ids end
in ``[c]`` / ``[python]``). Activating a twin puts the process where it would be had it started with
``SPARK_LOGSOURCE_PURE_PYTHON`` unset ("c") or set to 1 ("python"): the variable is set for the test, and every
choice a decoder module made at import (:data:`BOUND_AT_IMPORT`) is made again by the module's own code under it.
Code that asks :func:`spark_logsource.native.load_kernel` per call follows the variable by itself. So a test written
against the public functions (``read``, ``iter_batches``, ``decode_bulk``, a column builder) runs the twin it is
given, and the "c" twin is checked to really be compiled code.

Differential tests, which compare both twins inside one test, ask for the compiled modules with :func:`compiled`
and for the reference with the decoder's ``*_py`` function, or switch with :func:`activate` in a
``monkeypatch.context()``; they are marked ``differential`` (the pure-Python pass leaves them out, as it leaves out
the tests over ``twin``: both ran both twins). Test modules get kernels only from here: a rule in
``tests/kernels/test_twins.py`` fails on a direct kernel import or an ad-hoc use of the variable.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from spark_logsource import native

#: The two implementations of every decoder with a C twin, in the order tests run them (also the test ids).
TWINS = ("c", "python")

#: Every compiled module of the package (``setup.py`` builds them all or none).
KERNELS = ("spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames",
           "spark_logsource.mysql._kernel", "spark_logsource.memcached._kernel", "spark_logsource.yugabyte._kernel")


def _chosen(module: str, chooser: str) -> Callable[[], Any]:
    """The value ``module`` binds at import, computed again by its own function ``chooser``."""
    return lambda: getattr(importlib.import_module(module), chooser)()


def _loaded(kernel: str) -> Callable[[], Any]:
    """What a module binding ``load_kernel(kernel)`` at import would bind now."""
    return lambda: native.load_kernel(kernel)


#: (module, attribute, how the module computes it at import): the choices of a twin made once, at import, rather than
#: by asking ``load_kernel`` per call. ``tests/kernels/test_twins.py`` checks that no other module attribute holds
#: a kernel or one of its functions, so a new one cannot be missed.
BOUND_AT_IMPORT: tuple[tuple[str, str, Callable[[], Any]], ...] = (
    ("spark_logsource.tarantool.decode.rows", "decode_payload",
     _chosen("spark_logsource.tarantool.decode.rows", "_load_kernel")),
    ("spark_logsource.tarantool.stream.tail", "decode_payload",
     _chosen("spark_logsource.tarantool.decode.rows", "_load_kernel")),
    ("spark_logsource.tarantool.stream.packets", "_frames", _loaded("spark_logsource.tarantool._frames")),
    ("spark_logsource.mysql.binlog.checksum", "crc32",
     _chosen("spark_logsource.mysql.binlog.checksum", "_fastest_crc32")),
    ("spark_logsource.memcached.protocol", "_KERNEL", _loaded("spark_logsource.memcached._kernel")),
    ("spark_logsource.memcached.tap", "_KERNEL", _loaded("spark_logsource.memcached._kernel")),
    ("spark_logsource.memcached.client", "_KERNEL", _loaded("spark_logsource.memcached._kernel")),
)

#: (module, attribute): kernels bound whatever the switch says, used only after asking ``load_kernel`` per file
#: (``rows_encode.rows_encoder``, ``typed_kernel.kernel_available``): the twin needs nothing done to them.
ALWAYS_BOUND = (("spark_logsource.mysql.encode.images", "_kernel"), ("spark_logsource.mysql.table.kernel", "_kernel"),
                ("spark_logsource.mysql.encode.runs", "kernel"))


def missing_kernels() -> list[str]:
    """The compiled modules that do not import (whatever the switch says)."""
    return [name for name in KERNELS if native.import_kernel(name) is None]


def compiled(module: str) -> ModuleType:
    """The compiled module ``module`` for a differential test, whatever ``SPARK_LOGSOURCE_PURE_PYTHON`` says; the
    test is skipped when it is not built (``tests/kernels`` fails then, so the absence is never silent)."""
    kernel = native.import_kernel(module)
    if kernel is None:
        pytest.skip(f"{module} is not built (pip install -e . with a C compiler)")
    return kernel


@dataclass(frozen=True)
class Twin:
    """The implementation a test runs: ``name`` is "c" or "python"."""

    name: str

    @property
    def is_c(self) -> bool:
        """Whether this is the compiled twin."""
        return self.name == "c"

    def kernel(self, module: str) -> ModuleType | None:
        """The compiled module ``module`` for the "c" twin, None for the "python" one."""
        return compiled(module) if self.is_c else None

    def __str__(self) -> str:
        return self.name


def activate(name: str, patch: pytest.MonkeyPatch) -> Twin:
    """Make ``patch`` (undone after the test) put the process on the twin ``name``; skip "c" when not built."""
    if name not in TWINS:
        raise ValueError(f"no twin {name!r}: {TWINS}")
    if name == "c":
        missing = missing_kernels()
        if missing:
            pytest.skip(f"the C twin is not built ({', '.join(missing)}): pip install -e . with a C compiler")
        patch.delenv(native.PURE_PYTHON_ENV, raising=False)
    else:
        patch.setenv(native.PURE_PYTHON_ENV, "1")
    for module, attribute, choose in BOUND_AT_IMPORT:
        patch.setattr(importlib.import_module(module), attribute, choose())
    twin = Twin(name)
    _check(twin)
    return twin


def _check(twin: Twin) -> None:
    """The twin in force is the one asked for, where it can be seen from outside."""
    from spark_logsource.memcached import tap
    from spark_logsource.mysql.encode import images as rows_encode
    from spark_logsource.mysql.table import kernel as typed_kernel
    from spark_logsource.tarantool.decode import columns, rows

    builder = columns.column_builder("msgpack")
    if twin.is_c:
        assert isinstance(builder, columns.KernelColumnBuilder)
        assert rows.decode_payload is compiled("spark_logsource.tarantool._kernel").decode_payload
        assert rows_encode.rows_encoder() is rows_encode.encode_rows_event_c and typed_kernel.kernel_available()
        assert tap._KERNEL is compiled("spark_logsource.memcached._kernel")
    else:
        assert isinstance(builder, columns.PyColumnBuilder)
        assert rows.decode_payload is rows.decode_payload_py
        assert rows_encode.rows_encoder() is rows_encode.encode_rows_event_py and not typed_kernel.kernel_available()
        assert tap._KERNEL is None
