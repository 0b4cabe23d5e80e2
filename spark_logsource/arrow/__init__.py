"""Arrow output shared by every format: column builders, batch cutting, Spark Variant and JSON text."""
