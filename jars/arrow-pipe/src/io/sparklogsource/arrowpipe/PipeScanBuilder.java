package io.sparklogsource.arrowpipe;

import java.util.HashSet;
import java.util.Set;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Column pruning, top-level only: a column no operator needs is dropped by the Python process before its batch is
 * written, so it never crosses the pipe. Nested fields are kept whole (the contract allows partial pruning).
 * No filter is pushed: Spark applies every filter itself, exactly.
 */
final class PipeScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {

  private final StructType schema;
  private final CaseInsensitiveStringMap options;
  private StructType readSchema;

  PipeScanBuilder(StructType schema, CaseInsensitiveStringMap options) {
    this.schema = schema;
    this.options = options;
    this.readSchema = schema;
  }

  @Override
  public void pruneColumns(StructType required) {
    Set<String> names = new HashSet<>();
    for (StructField field : required.fields()) {
      names.add(field.name());
    }
    StructType kept = new StructType();
    for (StructField field : schema.fields()) {
      if (names.contains(field.name())) {
        kept = kept.add(field);
      }
    }
    readSchema = kept;
  }

  @Override
  public Scan build() {
    return new PipeScan(readSchema, PipeOptions.from(options));
  }
}
