# Databricks notebook source
# MAGIC %md
# MAGIC # Replication logs as DataFrames with spark-logsource
# MAGIC
# MAGIC Install the package on the cluster (`%pip install spark-logsource` or the wheel built from this repo), then
# MAGIC point Spark at Tarantool WAL files or MySQL / MariaDB binlogs in a Volume, DBFS or cloud storage.

# COMMAND ----------

# MAGIC %pip install spark-logsource

# COMMAND ----------

import spark_logsource

spark_logsource.register(spark)  # auto-registration also works after %pip
# Let the readers apply WHERE clauses themselves (skipping files and undecoded rows events):
spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")

# COMMAND ----------

# MAGIC %md ## Tarantool: which spaces changed, and how

# COMMAND ----------

xlog = spark.read.format("tarantool-xlog").load("/Volumes/main/logs/tarantool/")
xlog.createOrReplaceTempView("xlog")
display(spark.sql("""
    SELECT space_id, type, count(*) AS rows, min(timestamp) AS first_seen, max(timestamp) AS last_seen
    FROM xlog WHERE file_type = 'XLOG' AND space_id >= 512
    GROUP BY space_id, type ORDER BY rows DESC
"""))

# COMMAND ----------

# Tuple fields are Variant values: extract them with variant_get.
display(xlog.where("space_id = 512 AND type IN ('INSERT', 'REPLACE')")
        .selectExpr("lsn", "timestamp", "variant_get(tuple, '$[0]', 'bigint') AS id",
                    "variant_get(tuple, '$[1]', 'string') AS name"))

# COMMAND ----------

# MAGIC %md ## MySQL / MariaDB: row changes per table, with the statement that made them

# COMMAND ----------

changes = (spark.read.format("mysql-binlog")
           .option("tables", "shop.*")
           .load("s3://my-bucket/binlogs/"))
display(changes.groupBy("table", "op").count())
display(changes.where("table = 'orders' AND op = 'update'")
        .selectExpr("timestamp", "gtid", "variant_get(before, '$.status', 'string') AS old_status",
                    "variant_get(after, '$.status', 'string') AS new_status", "query"))

# COMMAND ----------

# MAGIC %md ## Damaged files
# MAGIC Bad blocks and events become rows with `_corrupt_record` set (file and byte offset in the message);
# MAGIC `.option("mode", "FAILFAST")` stops at the first one instead.

# COMMAND ----------

display(xlog.where("_corrupt_record IS NOT NULL").select("file", "offset", "_corrupt_record"))
