package io.sparklogsource.arrowpipe;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/** One Spark task per planned split. */
final class PipeScan implements Scan, Batch {

  private final StructType readSchema;
  private final PipeOptions options;

  PipeScan(StructType readSchema, PipeOptions options) {
    this.readSchema = readSchema;
    this.options = options;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return ArrowPipeSource.NAME + " " + options.label + " [" + options.splits.size() + " splits]";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    InputPartition[] partitions = new InputPartition[options.splits.size()];
    for (int i = 0; i < partitions.length; i++) {
      partitions[i] = new PipePartition(i, options.splits.get(i));
    }
    return partitions;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new PipeReaderFactory(options.python, options.module, options.format, readSchema.fieldNames(),
        options.ring);
  }
}
