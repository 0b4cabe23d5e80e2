# Databricks notebook source
# MAGIC %md
# MAGIC # Typed spaces and tables: each table with its own columns
# MAGIC
# MAGIC `view=space` gives one Tarantool space's changes with the space's fields as typed columns (names and types
# MAGIC from the space's format, as it was at each row's place in the log); `view=state` rebuilds the space's content
# MAGIC as of an LSN from the last snapshot and the xlogs after it, replaying UPDATE / UPSERT / DELETE the way
# MAGIC Tarantool does. Runs as is on the repository's `samples/`; on a cluster point `SAMPLES` at your own logs.

# COMMAND ----------

# MAGIC %pip install spark-logsource matplotlib

# COMMAND ----------

import builtins
import os
import shutil
import tempfile

from pyspark.sql import functions as F

import spark_logsource

if "spark" not in globals():  # Databricks (and the test harness) provide the session; plain Jupyter does not
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    spark.conf.set("spark.sql.repl.eagerEval.enabled", "true")  # DataFrames shown as tables
if "display" not in globals() and not hasattr(builtins, "display"):  # outside Databricks and IPython
    def display(obj):
        print(obj.limit(20).toPandas().to_string() if hasattr(obj, "toPandas") else obj)

spark_logsource.register(spark)

SAMPLES = os.environ.get("SPARK_LOGSOURCE_SAMPLES") or os.path.abspath(os.path.join(os.getcwd(), "..", "samples"))
WAL_DIR = os.path.join(SAMPLES, "tarantool", "typed")  # one instance: spaces users and kv, a format change
MYSQL = os.path.join(SAMPLES, "mysql")
OUTPUT = os.environ.get("SPARK_LOGSOURCE_OUTPUT") or tempfile.mkdtemp(prefix="spark-logsource-")

# COMMAND ----------

# MAGIC %md ## A typed space: `users`
# MAGIC Columns: `op, lsn, tsn, timestamp, replica_id`, then one column per field of the space's format
# MAGIC (unsigned/integer → bigint, number/double → double, decimal → decimal(38,18), uuid → string,
# MAGIC map/array/any → variant), `ops` (UPDATE / UPSERT operations) and `extra_fields` (fields beyond the format).
# MAGIC UPDATE and DELETE rows carry the key fields only.

# COMMAND ----------

users = spark.read.format("tarantool-xlog").option("view", "space").option("space", "users").load(WAL_DIR)
users.printSchema()
users.createOrReplaceTempView("users_changes")
display(users.select("op", "lsn", "timestamp", "id", "name", "age", "score", "balance", "uid", "email", "ops"))

# COMMAND ----------

# Typed columns work in plain SQL: no variant_get, no field numbers.
display(spark.sql("""
    SELECT op, count(*) AS changes, sum(balance) AS balance_written, max(score) AS max_score,
           count(email) AS rows_with_email
    FROM users_changes GROUP BY op ORDER BY op
"""))

# COMMAND ----------

# MAGIC %md
# MAGIC The space's format changed in the middle of the log (`users:format(...)` added `email`): the schema is the
# MAGIC union of the formats, and rows written before the change have `email` null. The UPDATE operations keep
# MAGIC their own shape (`[op, field, args...]`) in the `ops` variant.

# COMMAND ----------

display(spark.sql("""
    SELECT lsn, op, id, email, to_json(ops) AS ops
    FROM users_changes WHERE op IN ('UPDATE', 'UPSERT') ORDER BY lsn
"""))

# COMMAND ----------

# MAGIC %md ## The state of a space
# MAGIC `view=state`: the rows of `users` as `box.space.users:select()` returned them at the end of the log, and as
# MAGIC of an earlier LSN (`asOfLsn`). The replay runs in the Spark tasks, split by primary key (`statePartitions`).

# COMMAND ----------

state_now = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "users")
             .option("statePartitions", "4").load(WAL_DIR))
display(state_now.orderBy("id"))

format_change_lsn = users.where("email IS NOT NULL").agg(F.min("lsn")).first()[0]
state_before = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "users")
                .option("asOfLsn", str(format_change_lsn - 1)).load(WAL_DIR))
display(state_before.orderBy("id"))

# COMMAND ----------

# What changed between the two LSNs, key by key.
before = state_before.select("id", F.col("name").alias("name_before"), F.col("age").alias("age_before"))
after = state_now.select("id", F.col("name").alias("name_now"), F.col("age").alias("age_now"), "email")
diff = before.join(after, "id", "full_outer").withColumn(
    "change", F.when(F.col("name_before").isNull(), "inserted").when(F.col("name_now").isNull(), "deleted")
    .when((F.col("name_before") != F.col("name_now")) | ~F.col("age_before").eqNullSafe(F.col("age_now")), "updated")
    .otherwise("same"))
display(diff.orderBy("id"))

# COMMAND ----------

# MAGIC %md ## A typed MySQL table
# MAGIC `view=table` gives a binlog table its own typed columns (`before_*` / `after_*`), from the table map and
# MAGIC the binlog's column metadata. The cell is skipped, with a message, by versions that do not have it yet.

# COMMAND ----------

try:
    orders = (spark.read.format("mysql-binlog").option("view", "table").option("table", "shop.orders")
              .load(os.path.join(MYSQL, "full-image.000001")))
    orders.printSchema()
    display(orders.limit(20))
except Exception as exc:  # the option is rejected at load() by versions without view=table
    message = str(exc).strip().splitlines()
    if not any("view" in line or "table" in line for line in message):
        raise
    reason = next((line for line in reversed(message) if "Error" in line and "view" in line), message[-1])
    print("Skipped: view=table is not available for mysql-binlog in this spark-logsource version:", reason[:300])

# COMMAND ----------

# MAGIC %md ## Rows no format can name
# MAGIC A damaged block, or a row whose values do not fit the format in force, is never guessed at: in the default
# MAGIC `PERMISSIVE` mode it is a row with `_corrupt_record` set (file, byte offset, LSN and the reason).
# MAGIC Here a copy of the WAL directory has a few bytes of its first xlog overwritten.

# COMMAND ----------

damaged_dir = os.path.join(OUTPUT, "typed-damaged")
shutil.rmtree(damaged_dir, ignore_errors=True)
shutil.copytree(WAL_DIR, damaged_dir)
first_xlog = os.path.join(damaged_dir, sorted(f for f in os.listdir(damaged_dir) if f.endswith(".xlog"))[0])
with open(first_xlog, "rb") as f:
    data = bytearray(f.read())
data[len(data) * 3 // 4:len(data) * 3 // 4 + 8] = b"\xff" * 8
with open(first_xlog, "wb") as out:
    out.write(bytes(data))

damaged_kv = spark.read.format("tarantool-xlog").option("view", "space").option("space", "kv").load(damaged_dir)
display(damaged_kv.where("_corrupt_record IS NOT NULL").select("_corrupt_record"))
print("good kv rows still read:", damaged_kv.where("_corrupt_record IS NULL").count())
