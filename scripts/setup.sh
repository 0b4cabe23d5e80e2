#!/usr/bin/env bash
# Set up a development environment in .venv: the package (editable, compiled kernels built) and its Python
# dependencies. With --system, first install the Debian packages the test suite needs (needs root or sudo):
# tarantool 2.6 and mariadb-server/client 10.11 (the real servers and their own log readers, our oracles),
# and a JDK if javac is missing (it compiles the columnar JVM reader, jars/arrow-pipe).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--system" ]]; then
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(tarantool mariadb-server mariadb-client gcc python3-dev)
  # a JDK, not only a runtime: jars/arrow-pipe is compiled here with javac (no Maven, no download); Debian's
  # default JDK (17 on Debian 12)
  command -v javac >/dev/null || pkgs+=(default-jdk-headless)
  python3 -m venv --help >/dev/null 2>&1 || pkgs+=(python3-venv)
  missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [[ ! -x .venv/bin/python ]]; then
  # --system-site-packages: reuse what the machine already has (e.g. a preinstalled pyspark); pip adds the rest.
  python3 -m venv --system-site-packages .venv
fi
# What the editable install depends on: the build files, the version, the kernels' C sources and headers, the extras
# asked for. Their hash is kept in .venv (a fresh .venv has none); when it matches and the checks below pass, a re-run
# skips pip (a pip run with nothing to do still builds the kernels in an isolated environment: 8-50 s).
EXTRAS="spark,cli,test,bench"
STAMP=.venv/.spark-logsource-setup
inputs_hash() {
  { echo "extras=$EXTRAS python=$(.venv/bin/python -c 'import sys; print(sys.version)')"
    grep '^__version__' spark_logsource/__init__.py  # setup.py reads the version there
    { find spark_logsource -type f \( -name '*.c' -o -name '*.h' \) -print0
      printf '%s\0' setup.py pyproject.toml MANIFEST.in; } | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
# The install is still whole: the package imports from this tree, every kernel is built and no older than its
# sources, and every requirement of the extras is installed at an accepted version.
install_is_current() {
  local compiler=1  # without a C compiler the kernels cannot be built: the pure-Python fallback is the install
  command -v "${CC:-cc}" >/dev/null 2>&1 || compiler=0
  .venv/bin/python - "$PWD" "$EXTRAS" "$compiler" <<'PY'
import importlib.metadata as md
import importlib.util
import os
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement

repo, extras, compiler = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "1"
spec = importlib.util.find_spec("spark_logsource")
if spec is None or os.path.dirname(os.path.dirname(spec.origin)) != repo:
    sys.exit("spark_logsource is not installed from this tree")
kernels = [("tarantool._kernel", "tarantool"), ("tarantool._frames", "tarantool"), ("mysql._kernel", "mysql"),
           ("memcached._kernel", "memcached")]
for name, sources in kernels if compiler else []:
    kernel = importlib.util.find_spec(f"spark_logsource.{name}")
    if kernel is None or kernel.origin is None or not kernel.origin.endswith(".so"):
        sys.exit(f"{name} is not built")
    newest = max(os.path.getmtime(os.path.join(d, f)) for d in (f"{repo}/spark_logsource/{sources}",
                                                                f"{repo}/spark_logsource/_native")
                 for f in os.listdir(d) if f.endswith((".c", ".h")))
    if os.path.getmtime(kernel.origin) < newest:
        sys.exit(f"{name} is older than its sources")
for text in md.requires("spark-logsource") or []:
    req = Requirement(text)
    if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ["", *extras]):
        continue
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        sys.exit(f"{req.name} is missing")
    if not req.specifier.contains(version, prereleases=True):
        sys.exit(f"{req.name} {version} does not satisfy {req}")
PY
}
hash="$(inputs_hash)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$hash" ]] && reason="$(install_is_current 2>&1)"; then
  echo "setup: .venv is up to date (setup.py, pyproject.toml and the kernels' sources unchanged): pip skipped" >&2
else
  [[ -f "$STAMP" ]] && echo "setup: reinstalling: ${reason:-the build inputs changed}" >&2
  rm -f "$STAMP"
  # compat mode: a .pth path entry, so that Spark's auto-registration (pkgutil.iter_modules) sees pyspark_* modules
  .venv/bin/python -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat \
    -e ".[$EXTRAS]"
fi
.venv/bin/python - <<'PY'
import importlib.util, sys
for name in ("spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames", "spark_logsource.mysql._kernel",
             "spark_logsource.memcached._kernel"):
    built = importlib.util.find_spec(name) is not None
    print(f"setup: {name} {'built' if built else 'NOT built (pure Python fallback)'}", file=sys.stderr)
PY
# The columnar JVM reader (docs/spark-speed.md): compiled against the installed pyspark's jars, when its sources or
# that pyspark are newer than the jar. Without a JDK it is left out: read_columnar says how to build it.
jar=jars/arrow-pipe.jar
if command -v javac >/dev/null; then
  spark_jars="$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
  if [[ ! -f "$jar" ]] || [[ -n "$(find jars/arrow-pipe "$spark_jars" -newer "$jar" -print -quit)" ]]; then
    bash jars/arrow-pipe/build.sh .venv/bin/python || echo "setup: $jar could not be built (javac above says why):" \
      "read_columnar and its tests need it" >&2
  fi
else
  echo "setup: no javac: $jar not built (the columnar JVM reader; install a JDK 17)" >&2
fi
# written last: an interrupted run leaves no stamp, so the next run installs again
[[ -f "$STAMP" ]] || inputs_hash >"$STAMP"
