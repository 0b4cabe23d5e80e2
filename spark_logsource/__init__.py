"""spark-logsource: databases' replication logs as Spark DataFrames and Arrow tables."""
