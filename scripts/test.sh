#!/usr/bin/env bash
# Set everything up (Debian packages included) and run the whole test suite, then ruff.
# With arguments, they go to one pytest run; without, the suite runs twice: once with the compiled kernels, then
# the decoder tests again with SPARK_LOGSOURCE_PURE_PYTHON=1 (the pure-Python references must pass them too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --system
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/python -m ruff check .
if (($#)); then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
echo "test: pure-Python pass (decoders without the C kernels)" >&2
SPARK_LOGSOURCE_PURE_PYTHON=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m "not spark" \
  tests/kernels tests/tarantool tests/mysql
echo "test: the whole suite with the compiled kernels" >&2
exec .venv/bin/python -m pytest -q -p no:cacheprovider
