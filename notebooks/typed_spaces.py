# Databricks notebook source
# MAGIC %md
# MAGIC # Typed spaces and tables: each table with its own columns
# MAGIC
# MAGIC `view=space` gives one Tarantool space's changes with the space's fields as typed columns (names and types
# MAGIC from the space's format, as it was at each row's place in the log); `view=state` rebuilds the space's content
# MAGIC as of an LSN from the last snapshot and the xlogs after it, replaying UPDATE / UPSERT / DELETE the way
# MAGIC Tarantool does. Runs as is on the repository's `samples/`; on a cluster point `SAMPLES` at your own logs.
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
# MAGIC union of the formats, and tuples written before the change have `email` null. The change itself is a row of
# MAGIC Tarantool's `_space` system space (id 280) whose key is the space's id: its LSN is found in the raw log.

# COMMAND ----------

users_id = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "_space").load(WAL_DIR)
            .where("name = 'users'").first()["id"])
format_change_lsn = (spark.read.format("tarantool-xlog").load(WAL_DIR)
                     .where(f"""file_type = 'XLOG' AND space_id = 280 AND
                              coalesce(variant_get(key, '$[0]', 'int'), variant_get(tuple, '$[0]', 'int')) = {users_id}""")
                     .agg(F.max("lsn")).first()[0])
print(f"users is space {users_id}; its format changed at LSN {format_change_lsn}")
display(spark.sql(f"""
    SELECT lsn, op, id, name, email, lsn > {format_change_lsn} AS after_format_change
    FROM users_changes WHERE op IN ('INSERT', 'REPLACE', 'UPSERT') ORDER BY lsn
"""))

# COMMAND ----------

# UPDATE and UPSERT operations keep their own shape ([op, field, args...]; fields by number or by name) in `ops`.
display(spark.sql("""
    SELECT lsn, op, id, to_json(ops) AS ops
    FROM users_changes WHERE op IN ('UPDATE', 'UPSERT') ORDER BY lsn
"""))

# COMMAND ----------

# MAGIC %md ## The state of a space
# MAGIC `view=state`: the rows of `users` as `box.space.users:select()` returned them at the end of the log, and as
# MAGIC of an earlier LSN (`asOfLsn`: here just before the format change, so without `email`). The replay runs in
# MAGIC the Spark tasks, split by primary key (`statePartitions`).

# COMMAND ----------

state_now = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "users")
             .option("statePartitions", "4").load(WAL_DIR))
display(state_now.orderBy("id"))

state_before = (spark.read.format("tarantool-xlog").option("view", "state").option("space", "users")
                .option("asOfLsn", str(format_change_lsn - 1)).load(WAL_DIR))
display(state_before.orderBy("id"))

# COMMAND ----------

# What changed between the two LSNs, key by key (the fields both formats have).
common = [c for c in state_before.columns if c in state_now.columns and c not in ("id", "_corrupt_record")]
before = state_before.select("id", *[F.col(c).alias(f"{c}_before") for c in common], F.lit(True).alias("was"))
after = state_now.select("id", *[F.col(c).alias(f"{c}_now") for c in common], "email", F.lit(True).alias("is"))
differs = F.lit(False)
for c in common:  # Variant values compare by their JSON text
    is_variant = state_now.schema[c].dataType.typeName() == "variant"
    was, now = (F.to_json(F.col(f"{c}_{s}")) if is_variant else F.col(f"{c}_{s}") for s in ("before", "now"))
    differs = differs | ~was.eqNullSafe(now)
diff = before.join(after, "id", "full_outer").withColumn(
    "change", F.when(F.col("was").isNull(), "inserted").when(F.col("is").isNull(), "deleted")
    .when(differs, "updated").otherwise("same")).select(
    "id", "change", "name_before", "name_now", "age_before", "age_now", "email")
display(diff.orderBy("id"))

# COMMAND ----------

# MAGIC %md ## A typed MySQL table
# MAGIC `view=table` gives a binlog table its own typed columns (`before_*` / `after_*`), from the table map and
# MAGIC the binlog's column metadata, in the Debezium envelope (`op` c/u/d, `before`, `after`, `source`).

# COMMAND ----------

orders = (spark.read.format("mysql-binlog").option("view", "table").option("table", "shop.orders")
          .load(os.path.join(MYSQL, "full-image.000001")))
orders.printSchema()
display(orders.groupBy("op").count().orderBy("op"))
display(orders.where("op = 'u'").selectExpr("after.id", "before.qty AS qty_before", "after.qty AS qty_after",
                                            "before.note AS note_before", "after.note AS note_after", "source.gtid")
        .orderBy("id"))

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
