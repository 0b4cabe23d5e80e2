package io.sparklogsource.arrowpipe;

import java.io.IOException;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * A task's batches as the worker hands them over: through its shared-memory ring ({@link RingBatches}) or as one
 * Arrow IPC stream on its stdout. Either way they end with the worker's status line.
 */
interface Batches extends AutoCloseable {

  /** Loads the next batch into {@link #root()}; false after the last one. */
  boolean loadNextBatch() throws IOException;

  VectorSchemaRoot root() throws IOException;

  /** The status line after the last batch, or null when the worker closed its stdout first. */
  String status() throws IOException;

  @Override
  void close() throws IOException;

  /**
   * The batches of the task just sent: the worker's answer starts with {@code ring} when it offers its ring, and
   * with the stream's first message otherwise (a stream is also what follows a ring this JVM could not map).
   */
  static Batches of(PipeWorker worker, BufferAllocator allocator) throws IOException {
    if (worker.peek() == 'r') {
      Batches ring = RingBatches.accept(worker, allocator);
      if (ring != null) {
        return ring;
      }
    }
    return new StreamBatches(worker, allocator);
  }

  /** The task's batches as one Arrow IPC stream. */
  final class StreamBatches implements Batches {

    private final PipeWorker worker;
    private final ArrowStreamReader reader;

    StreamBatches(PipeWorker worker, BufferAllocator allocator) {
      this.worker = worker;
      reader = new ArrowStreamReader(worker.stream(), allocator);
    }

    @Override
    public boolean loadNextBatch() throws IOException {
      return reader.loadNextBatch();
    }

    @Override
    public VectorSchemaRoot root() throws IOException {
      return reader.getVectorSchemaRoot();
    }

    @Override
    public String status() throws IOException {
      return worker.readLine();
    }

    @Override
    public void close() throws IOException {
      reader.close();
    }
  }
}
