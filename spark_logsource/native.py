"""The one switch between the compiled kernels and their pure-Python references.

Each decoder with a C twin (``tarantool/_kernel.c``, ``mysql/_kernel.c``, …) asks :func:`load_kernel`, at import
or per call. It returns the compiled module, or None when ``SPARK_LOGSOURCE_PURE_PYTHON=1`` asks for the Python
reference or when the module was not built. Each module is imported once per process, here: asking again costs a
dictionary lookup (and the switch, read each time, so a test can flip it), never another import attempt. The twins
give the same output and raise the same errors for the same input (``docs/ARCHITECTURE.md``, "the twin rule"); the
Python path is several times slower, so a missing kernel that nobody asked for is logged once as a warning instead
of passing unnoticed.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

log = logging.getLogger(__name__)

#: Set to "1" to use the pure-Python references even where the kernels are built (tests run the suite both ways).
PURE_PYTHON_ENV = "SPARK_LOGSOURCE_PURE_PYTHON"

_warned: set[str] = set()
#: module name -> the compiled module, or None when it does not import: each kernel is looked for once.
_imported: dict[str, ModuleType | None] = {}


def pure_python_forced() -> bool:
    """Whether the environment asks for the pure-Python references."""
    return os.environ.get(PURE_PYTHON_ENV) == "1"


def import_kernel(module: str) -> ModuleType | None:
    """The compiled module ``module`` if it was built, else None (whatever the switch says); imported once."""
    if module not in _imported:
        try:
            _imported[module] = importlib.import_module(module)
        except ImportError:
            _imported[module] = None
    return _imported[module]


def load_kernel(module: str) -> ModuleType | None:
    """The compiled module to use: None when the switch asks for pure Python or when it is not built (warned once)."""
    if pure_python_forced():
        return None
    kernel = import_kernel(module)
    if kernel is None and module not in _warned:
        _warned.add(module)
        log.warning("%s is not built: decoding in pure Python, several times slower (install a C compiler and "
                    "reinstall; set %s=1 to choose pure Python and silence this)", module, PURE_PYTHON_ENV)
    return kernel
