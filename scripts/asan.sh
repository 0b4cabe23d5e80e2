#!/usr/bin/env bash
# The compiled kernels' tests under AddressSanitizer: a copy of the sources with its kernels built with
# -fsanitize=address (the checkout's own build is left alone), and the kernel, run and bad-input tests run against
# it. Any out-of-bounds access, use after free or double free aborts the run with ASan's report. Needs .venv
# (scripts/setup.sh) and gcc. Arguments go to pytest instead of the default test selection.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="$repo/.venv/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tar --exclude='*.so' --exclude=__pycache__ -cf - setup.py pyproject.toml MANIFEST.in spark_logsource tests \
  | tar -xf - -C "$work"
echo "asan: building the kernels with -fsanitize=address" >&2
(cd "$work" && CFLAGS="-fsanitize=address -fno-omit-frame-pointer -O1 -g" LDFLAGS="-fsanitize=address" \
  "$python" setup.py -q build_ext --inplace >/dev/null)

if (($#)); then
  selection=("$@")
else
  selection=(-m "not spark" tests/kernels tests/tarantool/test_kernel.py tests/tarantool/test_kernel_maps.py
             tests/tarantool/test_bad_input.py tests/mysql/test_kernel.py tests/mysql/test_rows_run.py
             tests/mysql/test_bad_input.py tests/mysql_typed/test_typed_kernel.py tests/mysql_typed/test_json_kernel.py
             tests/memcached/test_decode_property.py tests/mysql_snapshot/test_fast.py tests/yugabyte/test_kernel.py
             tests/yugabyte/test_kernel_writes.py)
fi

cd "$work"
# The sanitizer's runtime must be the first library of the Python process. The servers and tools the tests start
# (mariadbd, tarantool, mariadb-binlog) are not instrumented: LD_PRELOAD is taken out of the environment they get.
LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
  PYTHONPATH="$work" "$python" - "${selection[@]}" <<'PY'
import importlib
import os
import sys

os.environ.pop("LD_PRELOAD")
import pytest

for name in ("tarantool._kernel", "tarantool._frames", "mysql._kernel", "memcached._kernel", "yugabyte._kernel"):
    kernel = importlib.import_module(f"spark_logsource.{name}")  # fails when the sanitized build did not build it
    if not kernel.__file__.startswith(os.getcwd()):
        raise SystemExit(f"asan: imported {kernel.__file__}, not the sanitized build in {os.getcwd()}")
# --capture=sys: a sanitizer report (written to fd 2 just before the abort) reaches the log
raise SystemExit(pytest.main(["-q", "-p", "no:cacheprovider", "--capture=sys", f"--basetemp={os.getcwd()}/pytest-tmp",
                              *sys.argv[1:]]))
PY
