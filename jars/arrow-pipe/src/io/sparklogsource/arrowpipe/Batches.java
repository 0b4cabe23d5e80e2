package io.sparklogsource.arrowpipe;

import java.io.IOException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;

import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageChannelReader;
import org.apache.arrow.vector.ipc.message.MessageResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;

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

  /** The longest message metadata read (a batch's is a few KiB): Arrow allocates what the length prefix says. */
  int MAX_METADATA_BYTES = 16 << 20;

  /**
   * Refuses a message whose length prefix (at {@code head}'s position, little-endian; after the continuation word
   * 0xFFFFFFFF, or alone in the older format) is longer than {@link #MAX_METADATA_BYTES} or than the {@code
   * available} bytes: Arrow would allocate it before reading (a damaged prefix of 0.9 GB would end the executor).
   */
  static void checkMessageLength(ByteBuffer head, long available) throws IOException {
    head.order(ByteOrder.LITTLE_ENDIAN);
    if (head.remaining() < 8) {
      return;  // Arrow reads what is there, and reports the end of input
    }
    int first = head.getInt(head.position());
    long length = first == -1 ? head.getInt(head.position() + 4) : first;
    long prefix = first == -1 ? 8 : 4;
    if (length < 0 || length > MAX_METADATA_BYTES || length > available - prefix) {
      throw new IOException("the worker's message claims " + length + " bytes of metadata, with " + (available
          - prefix) + " there and at most " + MAX_METADATA_BYTES + " read");
    }
  }

  /**
   * Loads one record batch message with its body into {@code root}, after {@link BatchCheck} (Arrow's loader would
   * grow short buffers rather than refuse them). The body is released here, whatever happens.
   */
  static void load(Message message, ArrowBuf body, VectorSchemaRoot root, VectorLoader loader) throws IOException {
    if (message.headerType() != MessageHeader.RecordBatch) {
      body.close();
      throw new IOException("the worker sent a message that is no record batch (header " + message.headerType()
          + ")");
    }
    ArrowRecordBatch records;
    try {
      records = MessageSerializer.deserializeRecordBatch(message, body);  // releases the body: its slices hold it
    } catch (IOException | RuntimeException e) {
      if (body.refCnt() > 0) {
        body.close();
      }
      throw e;
    }
    try (records) {
      String flaw = BatchCheck.flaw(root.getSchema(), records);
      if (flaw != null) {
        throw new BorrowedArrowColumnVector.MalformedBatch(flaw);
      }
      loader.load(records);
    }
  }

  /** The task's batches as one Arrow IPC stream, read message by message so that each batch is checked. */
  final class StreamBatches implements Batches {

    private final PipeWorker worker;
    private final BufferAllocator allocator;
    private final MessageChannelReader messages;
    private VectorSchemaRoot root;
    private VectorLoader loader;

    StreamBatches(PipeWorker worker, BufferAllocator allocator) {
      this.worker = worker;
      this.allocator = allocator;
      messages = new MessageChannelReader(new ReadChannel(Channels.newChannel(worker.stream())), allocator);
    }

    /** Reads the stream's schema, once. */
    private void start() throws IOException {
      if (root != null) {
        return;
      }
      checkMessageLength(ByteBuffer.wrap(worker.peekBytes(8)), Long.MAX_VALUE);
      MessageResult first = messages.readNext();
      if (first != null && first.getBodyBuffer() != null) {
        first.getBodyBuffer().close();  // a schema has no body; one that does is refused below
      }
      if (first == null || first.getMessage().headerType() != MessageHeader.Schema
          || first.getMessage().bodyLength() != 0) {
        throw new IOException("Unexpected end of input. Missing schema.");
      }
      root = VectorSchemaRoot.create(MessageSerializer.deserializeSchema(first.getMessage()), allocator);
      loader = new VectorLoader(root);
    }

    @Override
    public boolean loadNextBatch() throws IOException {
      start();
      checkMessageLength(ByteBuffer.wrap(worker.peekBytes(8)), Long.MAX_VALUE);
      MessageResult next = messages.readNext();
      if (next == null) {
        return false;  // the end marker
      }
      ArrowBuf body = next.getBodyBuffer() == null ? allocator.getEmpty() : next.getBodyBuffer();
      load(next.getMessage(), body, root, loader);
      return true;
    }

    @Override
    public VectorSchemaRoot root() throws IOException {
      start();
      return root;
    }

    @Override
    public String status() throws IOException {
      return worker.readLine();
    }

    @Override
    public void close() {
      if (root != null) {
        root.close();
      }
    }
  }
}
