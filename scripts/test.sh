#!/usr/bin/env bash
# Set everything up (the Debian packages that are missing included), run ruff and mypy (strict on the package:
# pyproject.toml), then the tests. With arguments, they go to one pytest run.
# Without, these passes: the decoder tests with SPARK_LOGSOURCE_PURE_PYTHON=1 (the pure-Python references must pass
# them too) beside the kernels' tests under AddressSanitizer, the decoder tests and a Spark module on Python 3.12
# (scripts/py312.sh) and the deployment groups (tests/deploy: a standalone cluster, then Spark Connect, then
# spark-pipelines, each its own pytest process); then the whole suite with the compiled kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --system
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy
# A pass that hangs (a JVM or a server that never answers) is ended with its log shown, well inside CI's 90 minutes
# (a quiet run takes about a quarter of these).
PASS_LIMIT=1800 SUITE_LIMIT=2700
if (($#)); then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
# Two single-process passes side by side (one core each): the pure-Python decoders, and the compiled kernels'
# tests under AddressSanitizer (scripts/asan.sh).
asan_log="$(mktemp)" py312_log="$(mktemp)" deploy_log="$(mktemp)"
timeout -k 60 "$PASS_LIMIT" bash scripts/asan.sh >"$asan_log" 2>&1 &
asan_pid=$!
# Python 3.12 and the deployment groups beside them: mostly waiting (pip, JVMs starting), their CPU fills the gaps
timeout -k 60 "$PASS_LIMIT" bash scripts/py312.sh >"$py312_log" 2>&1 &
py312_pid=$!
{ timeout -k 60 "$PASS_LIMIT" .venv/bin/python -m pytest -q -p no:cacheprovider -m cluster tests/deploy &&
  timeout -k 60 "$PASS_LIMIT" .venv/bin/python -m pytest -q -p no:cacheprovider -m connect tests/deploy &&
  timeout -k 60 "$PASS_LIMIT" .venv/bin/python -m pytest -q -p no:cacheprovider -m pipelines tests/deploy; } >"$deploy_log" 2>&1 &
deploy_pid=$!
# set -e holds inside a trap too: every command here must succeed
trap 'for p in "$asan_pid" "$py312_pid" "$deploy_pid"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null ||
  true; done; rm -f "$asan_log" "$py312_log" "$deploy_log"' EXIT
echo "test: pure-Python pass (decoders without the C kernels); the kernels under AddressSanitizer beside it" >&2
pure_rc=0
# The test folders of every decoder with a C twin. Tests over the twin fixture and those marked differential are left
# out (tests/conftest.py): they ran both twins already; this pass is for code that picks its implementation itself.
# tests/mysql_stream is not here: its live client hands events to the same decoders as tests/mysql, and its tests
# cost minutes of waiting on servers.
SPARK_LOGSOURCE_PURE_PYTHON=1 timeout -k 60 "$PASS_LIMIT" .venv/bin/python -m pytest -q -p no:cacheprovider -m "not spark" \
  tests/kernels tests/tarantool tests/tarantool_live tests/tarantool_typed tests/mysql tests/mysql_typed \
  tests/memcached tests/yugabyte || pure_rc=$?
asan_rc=0 py312_rc=0 deploy_rc=0
wait "$asan_pid" || asan_rc=$?
wait "$py312_pid" || py312_rc=$?
wait "$deploy_pid" || deploy_rc=$?
trap 'rm -f "$asan_log" "$py312_log" "$deploy_log"' EXIT  # the jobs are reaped: their process ids may be reused
report() {  # report NAME RC LOG: its pytest runs' closing lines, or the log's tail when it failed
  if (($2 == 0)); then
    echo "test: $1 pass: $(grep -E '^[0-9]+ (passed|failed)' "$3" | paste -sd ';' || tail -n 1 "$3")" >&2
  else
    echo "test: the $1 pass failed (rc $2):" >&2
    tail -n 100 "$3" >&2
  fi
}
report "AddressSanitizer" "$asan_rc" "$asan_log"
report "Python 3.12" "$py312_rc" "$py312_log"
report "deployment (standalone cluster, Spark Connect, spark-pipelines)" "$deploy_rc" "$deploy_log"
if ((pure_rc != 0)); then
  echo "test: the pure-Python pass failed (rc $pure_rc)" >&2
fi
if ((asan_rc != 0 || pure_rc != 0 || py312_rc != 0 || deploy_rc != 0)); then
  exit 1
fi
rm -f "$asan_log" "$py312_log" "$deploy_log"
trap - EXIT
echo "test: the whole suite with the compiled kernels" >&2
exec timeout -k 60 "$SUITE_LIMIT" .venv/bin/python -m pytest -q -p no:cacheprovider
