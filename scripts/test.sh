#!/usr/bin/env bash
# Set everything up (Debian packages included) and run the whole test suite, then ruff.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --system
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/python -m ruff check .
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
