#!/usr/bin/env bash
# Regenerate samples/tarantool/: small Tarantool logs written by the real tarantool (Debian 2.6), used by the
# README's main-job command. Each workload of tests/workloads/ listed below runs on a fresh instance (loopback
# listen, temp dir); only its .xlog/.snap/.vylog files are kept, in samples/tarantool/<workload>/.
# Timestamps and generated uuids differ from run to run; the rows are otherwise the same.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
out="$here/tarantool"
workloads=(dml types txn sync)
command -v tarantool >/dev/null || { echo "tarantool not found (apt-get install tarantool)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"
for name in "${workloads[@]}"; do
    dir="$tmp/$name"
    mkdir -p "$dir"
    extra=""
    if [ "$name" = sync ]; then extra=", replication_synchro_quorum = 1"; fi
    cat > "$dir/boot.lua" <<LUA
box.cfg{listen = '127.0.0.1:0', wal_dir = '$dir', memtx_dir = '$dir', vinyl_dir = '$dir', work_dir = '$dir',
    log = '$dir/tarantool.log', checkpoint_count = 100$extra}
dofile('$repo/tests/workloads/tarantool_$name.lua')
os.exit(0)
LUA
    (cd "$dir" && tarantool boot.lua) || { cat "$dir/tarantool.log" >&2; exit 1; }
    mkdir -p "$out/$name"
    find "$dir" -maxdepth 1 \( -name '*.xlog' -o -name '*.snap' -o -name '*.vylog' \) -exec cp {} "$out/$name/" \;
done
du -sh "$out"
