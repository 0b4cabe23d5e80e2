#!/usr/bin/env bash
# The suite on Python 3.12 as well as 3.11 (.venv): in .venv312, the package installed editable with its kernels
# compiled for 3.12, then the decoder tests (tests/kernels, tests/tarantool, tests/mysql without Spark, as the
# pure-Python pass chooses them, here with the compiled kernels), one Spark test module (tests/spark/test_reader.py:
# registration, pushdown on and off, options, splits, bad data) with Spark's Python workers on 3.12, and the wheel
# and sdist test (tests/core/test_install.py: a cp312 wheel with its four kernels).
# Python 3.12 is looked for as $PYTHON312, python3.12 on PATH, then pyenv's installed versions; with none, this
# fails saying so (README: "Python versions"), never skips. Arguments go to the decoder tests' pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python312() {
  local candidates=("${PYTHON312:-}" python3.12)
  if command -v pyenv >/dev/null 2>&1; then
    candidates+=("$(pyenv root)"/versions/3.12*/bin/python3.12)
  fi
  candidates+=(/usr/local/bin/python3.12 /usr/bin/python3.12)
  local c
  for c in "${candidates[@]}"; do
    # a pyenv shim answers to python3.12 even where it has no 3.12 to run: ask the interpreter itself
    if [[ -n "$c" ]] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then
      "$c" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  return 1
}

if ! py="$(find_python312)"; then
  echo "py312: no Python 3.12 found (tried \$PYTHON312, python3.12 on PATH, pyenv's versions, /usr/local/bin," \
    "/usr/bin): install one (e.g. pyenv install 3.12) or set PYTHON312=/path/to/python3.12" >&2
  exit 1
fi
venv=.venv312
[[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
# Reinstall only when what the install depends on changed (the build files, the kernels' C sources).
stamp="$venv/.spark-logsource-setup"
hash="$( { "$venv/bin/python" -c 'import sys; print(sys.version)'
           find setup.py pyproject.toml MANIFEST.in spark_logsource -type f \( -name '*.c' -o -name '*.h' \
             -o -name 'setup.py' -o -name 'pyproject.toml' -o -name 'MANIFEST.in' \) -print0 | LC_ALL=C sort -z |
             xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1)"
kernels_built() {
  "$venv/bin/python" - <<'PY'
import importlib.util, sys
names = ("spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames", "spark_logsource.mysql._kernel",
         "spark_logsource.memcached._kernel")
missing = [n for n in names if importlib.util.find_spec(n) is None]
sys.exit(f"py312: not built for {sys.version.split()[0]}: {', '.join(missing)}" if missing else 0)
PY
}
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$hash" ]] || ! kernels_built 2>/dev/null; then
  rm -f "$stamp"
  echo "py312: installing the package and its test dependencies into $venv ($("$venv/bin/python" -V))" >&2
  # compat mode, as in .venv: a path entry, so Spark's lookup of the pyspark_* modules sees them
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat \
    -e ".[test]"
  kernels_built
  echo "$hash" >"$stamp"
fi
export PYSPARK_PYTHON="$PWD/$venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/$venv/bin/python"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not spark" tests/kernels tests/tarantool tests/mysql "$@"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/spark/test_reader.py tests/core/test_install.py
