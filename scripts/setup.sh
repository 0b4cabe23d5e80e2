#!/usr/bin/env bash
# Set up a development environment in .venv: the package (editable, compiled kernels built) and its Python
# dependencies. With --system, first install the Debian packages the test suite needs (needs root or sudo):
# tarantool 2.6 and mariadb-server/client 10.11 (the real servers and their own log readers, our oracles),
# and a JDK if java is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--system" ]]; then
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(tarantool mariadb-server mariadb-client gcc python3-dev)
  command -v java >/dev/null || pkgs+=(openjdk-17-jre-headless)
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
# compat mode: a .pth path entry, so that Spark's auto-registration (pkgutil.iter_modules) sees pyspark_* modules
.venv/bin/python -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat \
  -e ".[spark,cli,test,bench]"
.venv/bin/python - <<'PY'
import importlib.util, sys
for name in ("spark_logsource.tarantool._kernel", "spark_logsource.tarantool._frames", "spark_logsource.mysql._kernel",
             "spark_logsource.memcached._kernel"):
    built = importlib.util.find_spec(name) is not None
    print(f"setup: {name} {'built' if built else 'NOT built (pure Python fallback)'}", file=sys.stderr)
PY
