# Databricks notebook source
# MAGIC %md
# MAGIC # Replication logs as DataFrames with spark-logsource
# MAGIC
# MAGIC Tarantool WAL files (`.xlog`, `.snap`) and MySQL / MariaDB binlogs, read as they are, with no server running.
# MAGIC This notebook runs as is on the small logs shipped in the repository's `samples/` (written by real servers);
# MAGIC on a cluster, point `SAMPLES` at a Volume, DBFS or cloud path holding your own logs.
# MAGIC
# MAGIC Sections: what changed (raw rows) · the change rate over time, per space and per table (a plot) ·
# MAGIC damaged files. The typed views (a space's fields as columns, a space's state) are in `typed_spaces`.
# MAGIC
# MAGIC **Install.** spark-logsource is not on a package index: build its wheel from the repository with the
# MAGIC cluster's Python (3.12 on Spark 4 runtimes): `pip wheel --no-deps -w dist .`, upload
# MAGIC `dist/spark_logsource-0.1.0-cp312-cp312-linux_x86_64.whl` to a Unity Catalog Volume, and put its path in the
# MAGIC next cell (`/Volumes/<catalog>/<schema>/<volume>/...`; here catalog `main`, schema `default`, volume `libs`).
# MAGIC Install it without the `[spark]` extra: that would replace the runtime's own pyspark. In Jupyter, skip the
# MAGIC cell and run `pip install -e '.[notebooks]'` in the repository instead. The README's "Databricks" section has
# MAGIC the details.

# COMMAND ----------

# MAGIC %pip install /Volumes/main/default/libs/spark_logsource-0.1.0-cp312-cp312-linux_x86_64.whl

# COMMAND ----------

import builtins
import os
import tempfile

import matplotlib.pyplot as plt  # the change-rate plot
import pandas as pd
from pyspark.sql import functions as F

import spark_logsource

if "spark" not in globals():  # Databricks (and the test harness) provide the session; plain Jupyter does not
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    spark.conf.set("spark.sql.repl.eagerEval.enabled", "true")  # DataFrames shown as tables
if "display" not in globals() and not hasattr(builtins, "display"):  # outside Databricks and IPython
    def display(obj):
        print(obj.limit(20).toPandas().to_string() if hasattr(obj, "toPandas") else obj)

spark_logsource.register(spark)  # Spark also finds the formats by itself after pip install

# The logs: the repository's samples (a Databricks Repo or a local clone runs the notebook from notebooks/).
SAMPLES = os.environ.get("SPARK_LOGSOURCE_SAMPLES") or os.path.abspath(os.path.join(os.getcwd(), "..", "samples"))
# Where plots and scratch files go (on a cluster: a Volume path every node can read).
OUTPUT = os.environ.get("SPARK_LOGSOURCE_OUTPUT") or tempfile.mkdtemp(prefix="spark-logsource-")
TARANTOOL = os.path.join(SAMPLES, "tarantool")
MYSQL = os.path.join(SAMPLES, "mysql")
print("logs from", SAMPLES, "- output to", OUTPUT)

# COMMAND ----------

# MAGIC %md ## Tarantool: which spaces changed, and how
# MAGIC Every row of every `.xlog` and `.snap`; `samples/tarantool` holds one WAL directory per workload.

# COMMAND ----------

xlog = (spark.read.format("tarantool-xlog")
        .option("recursiveFileLookup", "true")
        .load(TARANTOOL)
        .withColumn("workload", F.regexp_extract("file", r"tarantool/([^/]+)/", 1)))
xlog.createOrReplaceTempView("xlog")
display(spark.sql("""
    SELECT workload, space_id, type, count(*) AS rows, min(lsn) AS first_lsn, max(lsn) AS last_lsn
    FROM xlog WHERE file_type = 'XLOG' AND space_id >= 512
    GROUP BY workload, space_id, type ORDER BY workload, space_id, type
"""))

# COMMAND ----------

# Without a typed view, tuple fields are Variant values: extract them with variant_get (1-based in Lua, 0 here).
display(spark.sql("""
    SELECT lsn, timestamp, type,
           variant_get(tuple, '$[0]', 'bigint') AS id, variant_get(tuple, '$[1]', 'string') AS name
    FROM xlog WHERE workload = 'dml' AND file_type = 'XLOG' AND space_id = 512 AND type IN ('INSERT', 'REPLACE')
"""))

# COMMAND ----------

# MAGIC %md ## MySQL / MariaDB: row changes per table, with the statement that made them
# MAGIC `includeQuery=true` puts each row's statement (MariaDB's ANNOTATE_ROWS event, written with
# MAGIC `binlog_annotate_row_events`, the default) in the `query` column. Row images are Variant objects keyed by
# MAGIC column name: `variant_get(before, '$.qty', 'int')`.

# COMMAND ----------

changes = (spark.read.format("mysql-binlog").option("includeQuery", "true")
           .load(os.path.join(MYSQL, "full-image.000001")))
changes.createOrReplaceTempView("changes")
display(changes.groupBy("database", "table", "op").count().orderBy("database", "table", "op"))
# The order updates: one statement changed qty and note of every fourth order, in one transaction (one gtid).
display(spark.sql("""
    SELECT timestamp, gtid, variant_get(before, '$.id', 'int') AS id,
           variant_get(before, '$.qty', 'int') AS qty_before, variant_get(after, '$.qty', 'int') AS qty_after,
           variant_get(before, '$.note', 'string') AS note_before, variant_get(after, '$.note', 'string') AS note_after,
           query
    FROM changes WHERE `table` = 'orders' AND op = 'update' ORDER BY id
"""))

# COMMAND ----------

# MAGIC %md ## Change rate over time, per space and per table
# MAGIC Changes are counted per time bucket; the bucket width is picked from the data's time span (milliseconds
# MAGIC for a burst of test writes, minutes or hours for a day of production logs). Space names come from the
# MAGIC state of Tarantool's own `_space` system space, rebuilt from the same WAL directory.

# COMMAND ----------

BUCKETS_US = [1_000, 10_000, 100_000, 1_000_000, 10_000_000, 60_000_000, 600_000_000, 3_600_000_000, 86_400_000_000]


def change_rate(df, series_col):
    """Changes per time bucket and per ``series_col`` as a pandas table (rows: bucket start, columns: series)."""
    lo, hi = df.agg(F.min("timestamp"), F.max("timestamp")).first()
    span_us = max((hi - lo).total_seconds() * 1e6, 1)
    bucket = next((b for b in BUCKETS_US if span_us / b <= 60), BUCKETS_US[-1])
    counts = (df.groupBy(F.floor(F.unix_micros("timestamp") / bucket).alias("bucket"), series_col).count()
              .toPandas())
    table = counts.pivot_table(index="bucket", columns=series_col, values="count", fill_value=0)
    table = table.reindex(range(int(table.index.min()), int(table.index.max()) + 1), fill_value=0)  # quiet buckets
    table.index = pd.to_datetime(table.index * bucket, unit="us", utc=True).rename("time")
    return table, bucket


typed_dir = os.path.join(TARANTOOL, "typed")  # one Tarantool instance's WAL directory
space_names = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "_space").load(typed_dir)
               .select(F.col("id").alias("space_id"), F.col("name").alias("space")))
tarantool_changes = (spark.read.format("tarantool-xlog").load(typed_dir)
                     .where("file_type = 'XLOG' AND type IN ('INSERT', 'REPLACE', 'UPDATE', 'DELETE', 'UPSERT')")
                     .join(space_names, "space_id"))
mysql_changes = changes.withColumn("table_name", F.concat_ws(".", "database", "table"))

rates = {}  # title -> the plotted table of changes per bucket
fig, axes = plt.subplots(2, 1, figsize=(10, 7))
for ax, (title, df, series) in zip(axes, [("Tarantool changes per space", tarantool_changes, "space"),
                                          ("MySQL row changes per table", mysql_changes, "table_name")],
                                     strict=True):
    rate, bucket = change_rate(df, series)
    rates[title] = rate
    label = "time (UTC)"
    if bucket < 1_000_000:  # a sub-second burst: seconds since its start read better than clock times
        start = rate.index[0]
        rate.index = (rate.index - start).total_seconds()
        label = f"seconds since {start:%Y-%m-%d %H:%M:%S.%f} UTC"
    rate.plot(ax=ax, marker=".", drawstyle="steps-post")
    ax.set_xlabel(label)
    ax.set_title(f"{title} (changes per {bucket / 1e6:g} s)")
    ax.set_ylabel("changes")
fig.tight_layout()
plot_path = os.path.join(OUTPUT, "change_rate.png")
fig.savefig(plot_path, dpi=100)
display(fig)
print("plot written to", plot_path)

# COMMAND ----------

# MAGIC %md ## Damaged files
# MAGIC Bad blocks and events become rows with `_corrupt_record` set (the file and byte offset are in the
# MAGIC message), and every good row is still read; `.option("mode", "DROPMALFORMED")` skips them with a
# MAGIC warning and `.option("mode", "FAILFAST")` stops at the first one. Here a copy of a sample xlog and of a
# MAGIC sample binlog get a few bytes overwritten.

# COMMAND ----------

damaged = os.path.join(OUTPUT, "damaged")
os.makedirs(damaged, exist_ok=True)
for source, name in [(os.path.join(TARANTOOL, "txn", "00000000000000000000.xlog"), "00000000000000000000.xlog"),
                     (os.path.join(MYSQL, "full-image.000001"), "binlog.000001")]:
    with open(source, "rb") as f:
        data = bytearray(f.read())
    middle = len(data) // 2
    data[middle:middle + 16] = b"\xff" * 16
    with open(os.path.join(damaged, name), "wb") as out:
        out.write(bytes(data))

bad_xlog = spark.read.format("tarantool-xlog").load(os.path.join(damaged, "00000000000000000000.xlog"))
display(bad_xlog.where("_corrupt_record IS NOT NULL").select("file", "offset", "_corrupt_record"))
print("good Tarantool rows still read:", bad_xlog.where("_corrupt_record IS NULL").count())

bad_binlog = spark.read.format("mysql-binlog").load(os.path.join(damaged, "binlog.000001"))
display(bad_binlog.where("_corrupt_record IS NOT NULL").select("file", "pos", "_corrupt_record"))

# COMMAND ----------

try:
    spark.read.format("tarantool-xlog").option("mode", "FAILFAST").load(damaged + "/*.xlog").count()
except Exception as exc:  # the error names the file and the byte offset of the bad block
    print("FAILFAST:", str(exc).strip().splitlines()[-1][:300])
