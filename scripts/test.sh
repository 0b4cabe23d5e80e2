#!/usr/bin/env bash
# Set everything up (Debian packages included), run ruff, then the tests. With arguments, they go to one pytest run.
# Without, three passes: the decoder tests with SPARK_LOGSOURCE_PURE_PYTHON=1 (the pure-Python references must pass
# them too) beside the kernels' tests under AddressSanitizer, then the whole suite with the compiled kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --system
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/python -m ruff check .
if (($#)); then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
# Two single-process passes side by side (one core each): the pure-Python decoders, and the compiled kernels'
# tests under AddressSanitizer (scripts/asan.sh).
asan_log="$(mktemp)"
bash scripts/asan.sh >"$asan_log" 2>&1 &
asan_pid=$!
# set -e holds inside a trap too: every command here must succeed
trap 'pkill -P "$asan_pid" 2>/dev/null || true; kill "$asan_pid" 2>/dev/null || true; rm -f "$asan_log"' EXIT
echo "test: pure-Python pass (decoders without the C kernels); the kernels under AddressSanitizer beside it" >&2
pure_rc=0
SPARK_LOGSOURCE_PURE_PYTHON=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m "not spark" \
  tests/kernels tests/tarantool tests/mysql || pure_rc=$?
asan_rc=0
wait "$asan_pid" || asan_rc=$?
trap 'rm -f "$asan_log"' EXIT  # the job is reaped: its process id may be reused
if ((asan_rc == 0)); then
  echo "test: AddressSanitizer pass: $(tail -n 1 "$asan_log")" >&2
else
  echo "test: the AddressSanitizer pass failed (rc $asan_rc):" >&2
  tail -n 100 "$asan_log" >&2
fi
if ((pure_rc != 0)); then
  echo "test: the pure-Python pass failed (rc $pure_rc)" >&2
fi
if ((asan_rc != 0 || pure_rc != 0)); then
  exit 1
fi
rm -f "$asan_log"
trap - EXIT
echo "test: the whole suite with the compiled kernels" >&2
exec .venv/bin/python -m pytest -q -p no:cacheprovider
