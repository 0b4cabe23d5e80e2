package io.sparklogsource.arrowpipe;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The one table of a planned read: its schema is the format's, as the Python planner declared it. */
final class PipeTable implements SupportsRead {

  private final StructType schema;

  PipeTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public String name() {
    return ArrowPipeSource.NAME;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new PipeScanBuilder(schema, options);
  }
}
