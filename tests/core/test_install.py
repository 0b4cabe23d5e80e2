"""Installing the package as a Databricks cluster would: ``pip wheel .`` gives a wheel with every compiled
kernel, and that wheel, installed into a fresh virtual environment with no C compiler on PATH, loads them and
decodes with them. An sdist installed where there is no C compiler warns once that the kernels were not built
and decodes in pure Python, to the same rows.

The builds run on a copy of the source tree (an in-tree build would write ``build/`` beside a developer's work),
offline: ``--no-build-isolation`` with this environment's setuptools. The fresh environments have no pip and no
packages of their own; what the package depends on (pyarrow, numpy, ...) is reached through a ``.pth`` file
naming the directories this interpreter found them in, so nothing is downloaded.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
XLOG = (FIXTURES / "tarantool" / "test" / "vinyl" / "upgrade" / "2.5.1" / "gh-5107-upsert-upgrade"
        / "00000000000000000004.xlog")
KERNELS = ("spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames", "spark_logsource.mysql._kernel",
           "spark_logsource.memcached._kernel")
#: What the installed package needs at run time, and setuptools/wheel for building the sdist without isolation.
NEEDED = ("pyarrow", "numpy", "msgpack", "zstandard", "crc32c", "sqlglot", "setuptools", "wheel")
#: The line setup.py writes when a kernel cannot be compiled.
NOT_BUILT = "spark-logsource: the C kernels were not built"
#: Reads the installed package makes: one file of each format with a kernel; prints where the package and its
#: kernels came from and a digest of the rows.
DECODE = f"""
import hashlib, importlib.util, json, logging, sys
logging.basicConfig(level=logging.WARNING)
import spark_logsource
from spark_logsource import native
reads = [("mysql-binlog", {str(FIXTURES / "mysql-binlog" / "osheroff" / "mysql-bin.checksum-crc32")!r}, {{}}),
         ("tarantool-xlog", {str(XLOG)!r}, {{"tupleFormat": "json"}}),
         ("memcached-tap", {str(FIXTURES / "memcached-tap" / "engine-pu-dump.tap")!r}, {{}})]
digests = {{}}
for fmt, path, options in reads:
    table = spark_logsource.read(fmt, path, **options)
    digests[fmt] = [table.num_rows, hashlib.sha256(repr(table.to_pylist()).encode()).hexdigest()]
kernels = {{}}
for name in {list(KERNELS)!r}:
    spec = importlib.util.find_spec(name)
    kernels[name] = None if spec is None else spec.origin
print(json.dumps({{"package": spark_logsource.__file__, "kernels": kernels,
                  "loaded": [n for n in kernels if native.load_kernel(n) is not None], "digests": digests}}))
"""


def _copy_sources(dest: Path) -> Path:
    """The files a build reads (setup.py, pyproject.toml, MANIFEST.in, README.md, the modules), nothing built."""
    dest.mkdir(parents=True)
    names = ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", *(p.name for p in REPO.glob("pyspark_*.py")))
    for name in names:
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "spark_logsource", dest / "spark_logsource",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o", "*.pyc"))
    return dest


def _fresh_venv(path: Path) -> Path:
    """A virtual environment of the base interpreter with no pip and no packages, whose path reaches the
    directories that hold what the package needs (before the base interpreter's own site-packages)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    dirs: list[str] = []
    for name in NEEDED:
        found = str(Path(importlib.import_module(name).__file__).resolve().parent.parent)
        if found not in dirs and found != str(REPO):  # never this checkout's modules
            dirs.append(found)
    (site / "_spark_logsource_deps.pth").write_text("\n".join(dirs) + "\n")
    return python


def _no_compiler_env(venv_python: Path) -> dict[str, str]:
    """Only the fresh environment's bin/ on PATH (no cc, gcc or clang), no compiler variable, no pure-Python
    switch, nothing of this checkout on the path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "CXX", "LDSHARED", "PYTHONPATH", "SPARK_LOGSOURCE_PURE_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = str(venv_python.parent)
    assert all(shutil.which(cc, path=env["PATH"]) is None for cc in ("cc", "gcc", "clang"))
    return env


def _pip(venv_python: Path, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """This environment's pip acting on the fresh one (``--python``); ``--ignore-installed``: the editable
    install of this checkout, reachable through the ``.pth``, is never touched."""
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(venv_python),
                           "install", "--no-index", "--no-deps", "--ignore-installed", *args],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def _decode(venv_python: Path, env: dict[str, str], cwd: Path) -> tuple[dict, str]:
    run = subprocess.run([str(venv_python), "-c", DECODE], env=env, cwd=cwd, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps .`` of the sources, with this environment's compiler."""
    work = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(work / "src")
    out = work / "dist"
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps",
                          "--no-build-isolation", "--no-index", "-w", str(out), str(src)],
                         cwd=work, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    (found,) = out.glob("spark_logsource-*.whl")
    return found


def test_wheel_holds_every_compiled_kernel(wheel: Path) -> None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {k.replace(".", "/") + suffix for k in KERNELS} <= names
    assert "pyspark_mysql_binlog.py" in names  # Spark finds the formats by these modules, with no register()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"-{tag}-{tag}-" in wheel.name  # a wheel for this Python, not a pure one without its kernels


def test_wheel_in_a_fresh_venv_without_a_compiler_loads_its_kernels(wheel: Path, tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv")
    env = _no_compiler_env(python)
    run = _pip(python, str(wheel), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    found, stderr = _decode(python, env, tmp_path)
    installed = str(tmp_path / "venv")
    assert found["package"].startswith(installed)
    assert all(origin and origin.startswith(installed) and origin.endswith(".so")
               for origin in found["kernels"].values()), found["kernels"]
    assert sorted(found["loaded"]) == sorted(KERNELS)
    assert "is not built" not in stderr
    assert all(rows > 0 for rows, _ in found["digests"].values())
    pure, _ = _decode(python, {**env, "SPARK_LOGSOURCE_PURE_PYTHON": "1"}, tmp_path)
    assert pure["digests"] == found["digests"]  # the kernels and the Python references give the same rows


def test_sdist_without_a_compiler_warns_once_and_decodes_in_pure_python(tmp_path: Path) -> None:
    src = _copy_sources(tmp_path / "src")
    built = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "dist")], cwd=src,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (sdist,) = (tmp_path / "dist").glob("spark_logsource-*.tar.gz")
    python = _fresh_venv(tmp_path / "venv")
    env = _no_compiler_env(python)
    run = _pip(python, "-v", "--no-build-isolation", str(sdist), env=env, cwd=tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count(NOT_BUILT) == 1, output[-6000:]
    found, stderr = _decode(python, env, tmp_path)
    assert found["package"].startswith(str(tmp_path / "venv"))
    assert found["kernels"] == dict.fromkeys(KERNELS) and found["loaded"] == []
    assert stderr.count("spark_logsource.mysql._kernel is not built") == 1
    pure, _ = _decode(python, {**env, "SPARK_LOGSOURCE_PURE_PYTHON": "1"}, tmp_path)
    assert found["digests"] == pure["digests"] and all(rows > 0 for rows, _ in found["digests"].values())
