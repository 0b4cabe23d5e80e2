package io.sparklogsource.arrowpipe;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar reads only: each task's batches are the Python process's Arrow batches, not copied. */
final class PipeReaderFactory implements PartitionReaderFactory {

  private static final long serialVersionUID = 1L;

  private final String python;
  private final String module;
  private final String format;
  private final String[] columns;
  private final boolean ring;

  PipeReaderFactory(String python, String module, String format, String[] columns, boolean ring) {
    this.python = python;
    this.module = module;
    this.format = format;
    this.columns = columns;
    this.ring = ring;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException(ArrowPipeSource.NAME + " reads columnar batches only");
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new PipeReader(python, module, format, columns, (PipePartition) partition, ring);
  }
}
