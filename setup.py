"""Build and install spark-logsource.

The compiled kernels (C, behind the same narrow "buffer in, columns out" boundary as their pure-Python
reference implementations) are optional: without a C compiler the package installs and works in pure Python.
"""

from __future__ import annotations

import re
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

HERE = Path(__file__).resolve().parent
#: The one place the version is written is the package (``spark_logsource.__version__``); read, not imported
#: (importing the package needs pyarrow, which a build may not have yet).
VERSION = re.search(r'^__version__ = "([^"]+)"$', (HERE / "spark_logsource" / "__init__.py").read_text(),
                    re.MULTILINE).group(1)



def _headers(*packages: str) -> list[str]:
    """The C headers a kernel includes (its package's and the shared ``_native`` ones): a change rebuilds it."""
    return [str(p.relative_to(HERE)) for pkg in packages for p in sorted((HERE / "spark_logsource" / pkg).glob("*.h"))]


def _kernel(module: str, *header_dirs: str, parts: tuple[str, ...] = ()) -> Extension:
    """An optional C kernel ``spark_logsource.<module>`` built from its .c file (the module definition) and one file
    per concern, ``<module>_<part>.c``; rebuilt when a header changes."""
    base = f"spark_logsource/{module.replace('.', '/')}"
    return Extension(
        f"spark_logsource.{module}",
        sources=[f"{base}.c", *(f"{base}_{part}.c" for part in parts)],
        depends=_headers(*header_dirs) if header_dirs else [],
        # hidden: the parts of a kernel call each other directly (no PLT); the module exports PyInit_* alone
        extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"],
        optional=True,
    )


kernels = [
    _kernel("tarantool._kernel", "_native", "tarantool", parts=("values", "maps", "rows", "builder")),
    _kernel("tarantool._frames"),
    _kernel("memcached._kernel", "_native", "memcached"),
    _kernel("mysql._kernel", "_native", "mysql", parts=("values", "plans", "images", "typed", "runs", "text")),
    _kernel("yugabyte._kernel", "_native", "yugabyte", parts=("specs", "proto", "writes", "tables")),
]
kernels = [k for k in kernels if all((HERE / s).exists() for s in k.sources)]


class BuildKernels(build_ext):
    """Build every kernel it can; where one cannot be compiled (no C compiler on PATH, as on a cluster node
    installing an sdist), say so once, for all of them, and install the package to run in pure Python."""

    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)
        failed = []
        for ext in self.extensions:
            try:
                self.build_extension(ext)
            except (CCompilerError, ExecError, PlatformError) as exc:
                failed.append(f"{ext.name}: {exc}")
        if failed:
            self.warn("spark-logsource: the C kernels were not built (" + "; ".join(failed) + "); the package "
                      "decodes in pure Python, several times slower. Install a C compiler and the Python headers "
                      "and reinstall, or install the wheel built for this Python (README: Databricks).")

setup(
    name="spark-logsource",
    version=VERSION,
    description="Databases' replication logs (Tarantool xlog/snap, MySQL/MariaDB binlog) as Spark DataFrames",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=find_packages(include=["spark_logsource", "spark_logsource.*"]),
    py_modules=["pyspark_tarantool_xlog", "pyspark_mysql_binlog", "pyspark_memcached_tap", "pyspark_yugabyte_wal",
                "pyspark_tarantool_replication", "pyspark_mysql_replication"],
    ext_modules=kernels,
    cmdclass={"build_ext": BuildKernels},
    # py.typed (PEP 561): type checkers of a project that calls spark_logsource use the package's annotations
    package_data={"spark_logsource": ["py.typed"], "spark_logsource.tarantool": ["_kernel.pyi", "_frames.pyi"],
                  "spark_logsource.mysql": ["_kernel.pyi"], "spark_logsource.memcached": ["_kernel.pyi"],
                  "spark_logsource.yugabyte": ["_kernel.pyi"]},
    install_requires=[
        "pyarrow>=15",
        "msgpack>=1.0",
        # zstd blocks of Tarantool files and MySQL TRANSACTION_PAYLOAD events: the reference binding of libzstd,
        # with a streaming decompressor and a bounded max_output_size (the stdlib has no zstd before 3.14).
        "zstandard>=0.22",
        # Tarantool's CRC-32C (Castagnoli) over every block: hardware-accelerated, ~20x faster than a table in
        # Python, which would otherwise be the hot spot of reading a file.
        "crc32c>=2.3",
        # vectorised scans (binlog resync windows, per-row offsets of a batch) without a Python loop per item
        "numpy>=1.24",
        # mysql-binlog view=table replays CREATE / ALTER / RENAME TABLE from the binlog: a maintained SQL parser with a
        # MySQL dialect, rather than regexes (pure Python; docs/formats/mysql-typed.md "DDL replay")
        "sqlglot>=25",
    ],
    extras_require={
        "spark": ["pyspark>=4.0", "pandas>=2.2,<3"],  # pyspark 4.3 does not support pandas 3 yet
        "cli": ["pyyaml>=6", "tqdm>=4.60"],
        "test": ["pytest>=8", "chispa>=0.10", "hypothesis>=6", "pyspark>=4.0", "pandas>=2.2,<3", "pyyaml>=6",
                 "tqdm>=4.60", "ruff>=0.6", "pymysql>=1.1", "moto[server]>=5", "boto3>=1.28",
                 # the lint pass (make lint, scripts/test.sh, .pre-commit-config.yaml): mypy --strict on the package
                 # with the stubs of the typed libraries it calls (pyarrow and msgpack ship none: pyproject.toml),
                 # codespell on code and docs, pre-commit to run them before a commit; mypy below 3, as a new major
                 # version checks more and would fail CI on code that did not change
                 "mypy>=2.4,<3", "types-PyYAML", "types-PyMySQL", "types-tqdm", "codespell>=2.3", "pre-commit>=3.5",
                 "matplotlib>=3.7",  # tests/notebooks runs the notebooks, which draw their plots with it
                 # tests/deploy runs a Spark Connect session (remote("local[2]")): its client needs grpcio & co.
                 "pyspark[connect]>=4.0",
                 # tests/core/test_install.py builds the wheel and the sdist offline (no build isolation)
                 "setuptools>=68", "wheel>=0.40",
                 # the CDC recipes' tests MERGE changes into a real Delta table without a JVM (delta-spark needs
                 # Maven jars at run time): delta-rs' Python binding, kept by the Delta Lake project
                 "deltalake>=1.0"],
        # notebooks/: the change-rate plot is drawn with matplotlib (on Databricks it is preinstalled)
        "notebooks": ["pyspark>=4.0", "pandas>=2.2,<3", "matplotlib>=3.7"],
        # py-spy: bench_spark_handover.py --py-spy samples Spark's Python workers (a sampling profiler from outside)
        "bench": ["mysql-replication>=1.0", "pymysql>=1.1", "py-spy>=0.3"],
        # mysql-replication (live MySQL/MariaDB): pymysql does the client handshake and login (auth plugins,
        # AuthSwitch, TLS, caching_sha2 with RSA) and re-joins packets over 16 MiB; pure Python, well kept, and
        # already what the tests talk to the server with. The dump commands and events are our own code.
        "live": ["pymysql>=1.1"],
    },
    entry_points={"console_scripts": ["spark-logsource = spark_logsource.cli:main"]},
)
