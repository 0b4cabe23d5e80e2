package io.sparklogsource.arrowpipe;

import java.io.IOException;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.TaskInterruptListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task: borrows a Python worker, sends it the task and reads its Arrow batches ({@link Batches}) as columnar
 * batches. They count only when the worker's status line says {@code ok} with the number of rows read here; an error
 * status carries our decoder's message, which names the file and the offset.
 *
 * <p>{@link #close()} (Spark calls it when the task ends, however it ends) gives the worker back after a whole
 * answer (an {@code ok}, or one of our errors after a complete stream), and destroys it otherwise (a LIMIT
 * reached, a failure): it may still be writing. A killed task destroys its worker at once, so that a read blocked
 * on its pipe returns.
 */
final class PipeReader implements PartitionReader<ColumnarBatch> {

  private static final Logger LOG = LoggerFactory.getLogger(PipeReader.class);

  private final String[] columns;
  private final PipePartition partition;
  private final PipeWorker worker;
  private final BufferAllocator allocator;
  /** The task's batches, once the worker's answer has begun (the first {@link #next()}). */
  private Batches batches;
  private ColumnarBatch batch;
  private long rows;
  private boolean checkedNames;
  /** The worker answered the whole task and is in step for the next one. */
  private boolean inStep;
  /** Set once by {@link #close()}: the worker is no longer this task's (it may serve another one). */
  private boolean closed;

  PipeReader(String python, String module, String format, String[] columns, PipePartition partition,
      boolean ring) {
    this.columns = columns;
    this.partition = partition;
    worker = WorkerPool.borrow(python, module);
    try {
      allocator = new RootAllocator(Long.MAX_VALUE);
    } catch (RuntimeException e) {
      worker.destroy();
      throw e;
    }
    TaskContext task = TaskContext.get();
    if (task != null) {
      task.addTaskInterruptListener((TaskInterruptListener) (context, reason) -> interrupted());
    }
    try {
      worker.send(format, partition.split, columns, ring);
    } catch (IOException e) {
      // The worker died before taking the task: the first next() reports its exit.
    }
  }

  @Override
  public boolean next() throws IOException {
    if (inStep) {
      return false;
    }
    boolean loaded;
    VectorSchemaRoot root;
    try {
      if (batches == null) {
        batches = Batches.of(worker, allocator);
      }
      loaded = batches.loadNextBatch();
      root = batches.root();
    } catch (IOException | RuntimeException e) {
      throw workerFailure("its stream broke: " + e.getMessage(), e);
    }
    if (!loaded) {
      finish();
      return false;
    }
    List<FieldVector> vectors = root.getFieldVectors();
    if (!checkedNames) {
      checkNames(vectors);
      checkedNames = true;
    }
    ColumnVector[] wrapped = new ColumnVector[vectors.size()];
    try {
      for (int i = 0; i < wrapped.length; i++) {
        wrapped[i] = new BorrowedArrowColumnVector(vectors.get(i), root.getRowCount());
      }
    } catch (BorrowedArrowColumnVector.MalformedBatch e) {
      // Not one of our decoders' errors: the worker is broken, and close() destroys it (it is not in step).
      throw new PipeException(where() + "the worker wrote a malformed batch after " + rows + " rows: column "
          + e.getMessage(), e);
    }
    rows += root.getRowCount();
    batch = new ColumnarBatch(wrapped, root.getRowCount());
    return true;
  }

  private void checkNames(List<FieldVector> vectors) {
    boolean same = vectors.size() == columns.length;
    for (int i = 0; same && i < columns.length; i++) {
      same = vectors.get(i).getName().equals(columns[i]);
    }
    if (!same) {
      throw new PipeException(where() + "the worker wrote other columns than the " + columns.length
          + " asked for", null);
    }
  }

  /** After the end marker: the status line decides whether the stream was whole. */
  private void finish() throws IOException {
    String status = batches.status();
    if (status == null) {
      throw workerFailure("it ended without a status line", null);
    }
    if (status.startsWith("error internal ")) {
      throw new PipeException(where() + status.substring("error ".length()), null);
    }
    if (status.startsWith("error ")) {
      inStep = true;  // one of our errors, after a complete stream: the worker serves the next task
      throw new PipeException(where() + status.substring("error ".length()), null);
    }
    if (!status.equals("ok " + rows)) {
      throw new PipeException(where() + "the worker said '" + status + "' after " + rows + " rows", null);
    }
    inStep = true;
  }

  private PipeException workerFailure(String what, Throwable cause) {
    worker.destroy();
    Integer code = worker.exitCode();
    return new PipeException(where() + "the Python worker failed (" + what + "; exit status "
        + (code == null ? "unknown" : code) + "; its stderr is in the executor's log)", cause);
  }

  private String where() {
    return "task " + partition.index + ": ";
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  /** A killed task: its worker goes, so that a read blocked on its pipe returns; unless this reader let it go. */
  private synchronized void interrupted() {
    if (!closed) {
      worker.destroy();
    }
  }

  @Override
  public void close() throws IOException {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    try {
      if (inStep) {
        WorkerPool.giveBack(worker);
      } else {
        worker.destroy();
      }
    } finally {
      try {
        if (batches != null) {
          batches.close();
        }
      } finally {
        try {
          allocator.close();
        } catch (IllegalStateException leaked) {
          // Buffers still held when the allocator closes (Arrow frees none of them then). After a whole answer
          // that is a bug, and fails the task; after an early end (a LIMIT, a failure) the task's own outcome
          // stands, and the leak is logged.
          if (inStep) {
            throw leaked;
          }
          LOG.warn("{}Arrow buffers left after an early end: {}", where(), leaked.getMessage());
        }
      }
    }
  }
}
