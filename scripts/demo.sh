#!/usr/bin/env bash
# Set everything up (Python side) and run the main job: Spark SQL queries over the logs shipped in samples/, written
# by real servers (samples/make_*_samples.sh): the Tarantool 2.6 WAL directories of five workloads, then the MariaDB
# 10.11 binlogs of one workload under four server settings (full and minimal row images, compressed events, no
# checksums). tests/core/test_first_hour.py runs these queries and checks their results against the databases' own
# readers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
# Tarantool: per workload, user space (id >= 512) and request type: rows, their LSN range, and how many
# transactions wrote them (rows of one multi-statement transaction share its tsn).
.venv/bin/spark-logsource sql \
  "SELECT regexp_extract(file, 'tarantool/([^/]+)/', 1) AS workload, space_id, type, count(*) AS rows,
          min(lsn) AS first_lsn, max(lsn) AS last_lsn, count(DISTINCT replica_id, tsn) AS transactions
   FROM xlog WHERE file_type = 'XLOG' AND space_id >= 512
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" \
  --view xlog=tarantool-xlog:samples/tarantool --option xlog.recursiveFileLookup=true
# MySQL / MariaDB: per binlog (server setting) and table: row changes by kind, the transactions that made them and
# when (event times). The four settings hold the same workload, so the four binlogs give the same counts.
.venv/bin/spark-logsource sql \
  "SELECT regexp_extract(file, '([^/]+)[.][0-9]+$', 1) AS binlog, database, \`table\`,
          count_if(op = 'insert') AS inserts, count_if(op = 'update') AS updates, count_if(op = 'delete') AS deletes,
          count(DISTINCT gtid) AS transactions, min(timestamp) AS first_change, max(timestamp) AS last_change
   FROM binlog GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" \
  --view binlog=mysql-binlog:samples/mysql
