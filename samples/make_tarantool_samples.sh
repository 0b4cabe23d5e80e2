#!/usr/bin/env bash
# Regenerate samples/tarantool/: small Tarantool logs written by the real tarantool (Debian 2.6), used by the
# README's main-job command and the notebooks. Each workload listed below (tests/support/workloads/tarantool_<name>.lua;
# "typed" is tests/tarantool_typed/workload_typed.lua: formatted spaces, a format change, every update operation)
# runs on a fresh instance (loopback listen, temp dir); only its .xlog/.snap/.vylog files are kept, in
# samples/tarantool/<workload>/. Timestamps and generated uuids differ from run to run; the rows are otherwise the
# same. Usage: make_tarantool_samples.sh [workload ...]   (default: all of them; only those named are replaced)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
out="$here/tarantool"
workloads=("$@")
if [ ${#workloads[@]} -eq 0 ]; then workloads=(dml types txn sync typed); fi
command -v tarantool >/dev/null || { echo "tarantool not found (apt-get install tarantool)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
for name in "${workloads[@]}"; do
    dir="$tmp/$name"
    script="$repo/tests/support/workloads/tarantool_$name.lua"
    if [ "$name" = typed ]; then script="$repo/tests/tarantool_typed/workload_typed.lua"; fi
    mkdir -p "$dir"
    extra=""
    if [ "$name" = sync ]; then extra=", replication_synchro_quorum = 1"; fi
    cat > "$dir/boot.lua" <<LUA
box.cfg{listen = '127.0.0.1:0', wal_dir = '$dir', memtx_dir = '$dir', vinyl_dir = '$dir', work_dir = '$dir',
    log = '$dir/tarantool.log', checkpoint_count = 100$extra}
dofile('$script')
os.exit(0)
LUA
    (cd "$dir" && tarantool boot.lua) || { cat "$dir/tarantool.log" >&2; exit 1; }
    rm -rf "${out:?}/$name"
    mkdir -p "$out/$name"
    find "$dir" -maxdepth 1 \( -name '*.xlog' -o -name '*.snap' -o -name '*.vylog' \) -exec cp {} "$out/$name/" \;
done
du -sh "$out"
