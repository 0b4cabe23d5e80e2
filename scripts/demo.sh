#!/usr/bin/env bash
# Set everything up (Python side) and run the main job: a Spark SQL query over the sample Tarantool logs shipped in
# samples/ (written by a real Tarantool 2.6), and over the sample MySQL binlogs when present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/spark-logsource sql \
  "SELECT regexp_extract(file, 'tarantool/([^/]+)/', 1) AS workload, space_id, type, count(*) AS rows,
          min(lsn) AS first_lsn, max(lsn) AS last_lsn, count_if(NOT is_commit) AS uncommitted_stmts
   FROM xlog WHERE file_type = 'XLOG' AND space_id >= 512
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" \
  --view xlog=tarantool-xlog:samples/tarantool --option xlog.recursiveFileLookup=true
