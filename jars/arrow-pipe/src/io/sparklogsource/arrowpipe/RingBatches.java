package io.sparklogsource.arrowpipe;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.storage.StorageUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task's batches through the worker's shared-memory ring (spark_logsource/arrow/ring.py has the exchange): two
 * memory files of the worker, mapped here read-only through {@code /proc/PID/fd}; each batch is a one-batch Arrow
 * IPC stream at the start of one of them, whose batch message is copied once into this task's allocator, after
 * which the worker may reuse the file ({@code free}). A pipe would copy it four times (into the kernel, out of it,
 * and twice in Java's streams).
 *
 * <p>What the worker says is checked before it is read: the files must be memory files, a batch must lie within
 * the file as it is now, and its message must be a record batch whose body lies within the batch.
 */
public final class RingBatches implements Batches {

  /**
   * The largest file mapped: what one mapping can hold. The readers cut batches at 256 MiB (MAX_BATCH_BYTES), but a
   * single row over the cap is a batch of its own, and the stream reads it too.
   */
  private static final long MAX_FILE_BYTES = Integer.MAX_VALUE - 8;
  private static final int MAX_SCHEMA_BYTES = 16 << 20;
  private static final Logger LOG = LoggerFactory.getLogger(RingBatches.class);
  private static final AtomicLong ACCEPTED = new AtomicLong();
  private static final AtomicBoolean REFUSAL_LOGGED = new AtomicBoolean();

  private final PipeWorker worker;
  private final BufferAllocator allocator;
  private final FileChannel[] files;
  private final MappedByteBuffer[] maps = new MappedByteBuffer[2];
  private final VectorSchemaRoot root;
  private final VectorLoader loader;
  private String status;

  private RingBatches(PipeWorker worker, BufferAllocator allocator, FileChannel[] files, Schema schema) {
    this.worker = worker;
    this.allocator = allocator;
    this.files = files;
    root = VectorSchemaRoot.create(schema, allocator);
    loader = new VectorLoader(root);
  }

  /**
   * Reads the worker's {@code ring PID FD0 FD1 SCHEMA_BYTES} line and schema, and maps its files: the ring, or
   * null when they cannot be opened here (the worker is told, and answers with a stream).
   */
  static RingBatches accept(PipeWorker worker, BufferAllocator allocator) throws IOException {
    String[] offer = fields(worker.readLine(), "ring", 5);
    int schemaBytes = number(offer[4], MAX_SCHEMA_BYTES);
    Schema schema = MessageSerializer.deserializeSchema(
        new ReadChannel(Channels.newChannel(new ByteArrayInputStream(worker.readBytes(schemaBytes)))));
    int pid = number(offer[1], Integer.MAX_VALUE);
    FileChannel[] files = new FileChannel[2];
    try {
      for (int i = 0; i < 2; i++) {
        Path path = Path.of("/proc", Integer.toString(pid), "fd", Integer.toString(number(offer[2 + i],
            Integer.MAX_VALUE)));
        if (!Files.readSymbolicLink(path).toString().startsWith("/memfd:")) {
          throw new IOException(path + " is not a memory file");
        }
        files[i] = FileChannel.open(path, StandardOpenOption.READ);
      }
    } catch (IOException | RuntimeException e) {
      closeAll(files);
      if (!REFUSAL_LOGGED.getAndSet(true)) {
        LOG.warn("The Python worker's memory files cannot be opened here ({}): batches go through its pipe",
            e.toString());
      }
      worker.answer("stream");
      return null;
    }
    try {
      RingBatches ring = new RingBatches(worker, allocator, files, schema);
      worker.answer("mapped");
      ACCEPTED.incrementAndGet();
      return ring;
    } catch (IOException | RuntimeException e) {
      closeAll(files);
      throw e;
    }
  }

  /** How many tasks of this JVM took their batches through a ring (for tests and metrics). */
  public static long accepted() {
    return ACCEPTED.get();
  }

  @Override
  public boolean loadNextBatch() throws IOException {
    String line = worker.readLine();
    if (line == null || !line.startsWith("batch ")) {
      status = line;
      return false;
    }
    String[] batch = fields(line, "batch", 4);
    int slot = number(batch[1], 1);
    long length = number(batch[2], MAX_FILE_BYTES);
    long size = number(batch[3], MAX_FILE_BYTES);
    if (length > size) {
      throw new IOException("the worker's batch of " + length + " bytes overruns its file of " + size);
    }
    ByteBuffer view = mapped(slot, size).duplicate();
    view.position(0).limit((int) length);
    ReadChannel in = new ReadChannel(new BufferChannel(view));
    // The slot holds a one-batch stream: the schema's message (the same as the offer's; its body is empty), then
    // the batch's.
    Batches.checkMessageLength(view.duplicate(), view.remaining());
    MessageMetadataResult head = MessageSerializer.readMessage(in);
    if (head != null && head.getMessage().headerType() == MessageHeader.Schema && head.getMessageBodyLength() == 0) {
      Batches.checkMessageLength(view.duplicate(), view.remaining());
      head = MessageSerializer.readMessage(in);
    }
    if (head == null) {
      throw new IOException("the worker's slot " + slot + " holds no record batch");
    }
    long bodyBytes = head.getMessageBodyLength();
    if (bodyBytes < 0 || bodyBytes > length - in.bytesRead()) {
      throw new IOException("the worker's batch body of " + bodyBytes + " bytes overruns its " + length);
    }
    // A batch without columns (a count) has no body; Arrow's own reader gives it an empty buffer too.
    ArrowBuf body = bodyBytes == 0 ? allocator.getEmpty()
        : MessageSerializer.readMessageBody(in, bodyBytes, allocator);
    Batches.load(head.getMessage(), body, root, loader);
    worker.answer("free");
    return true;
  }

  /** File {@code slot} mapped with at least {@code size} bytes, which it must hold now (else a read would fault). */
  private MappedByteBuffer mapped(int slot, long size) throws IOException {
    if (maps[slot] == null || maps[slot].capacity() < size) {
      if (files[slot].size() < size) {
        throw new IOException("the worker's file " + slot + " holds " + files[slot].size() + " bytes, not "
            + size);
      }
      if (maps[slot] != null) {
        StorageUtils.dispose(maps[slot]);  // a smaller mapping of the same file: every batch was copied out of it
      }
      maps[slot] = files[slot].map(FileChannel.MapMode.READ_ONLY, 0, size);
    }
    return maps[slot];
  }

  @Override
  public VectorSchemaRoot root() {
    return root;
  }

  @Override
  public String status() {
    return status;
  }

  @Override
  public void close() throws IOException {
    try {
      root.close();
    } finally {
      // Unmapped now rather than at some later garbage collection: a mapping holds the worker's pages even after
      // the worker is gone. Every batch was copied out of them, so nothing reads them any more.
      for (int i = 0; i < maps.length; i++) {
        if (maps[i] != null) {
          StorageUtils.dispose(maps[i]);
          maps[i] = null;
        }
      }
      closeAll(files);
    }
  }

  private static void closeAll(FileChannel[] files) throws IOException {
    for (FileChannel file : files) {
      if (file != null) {
        file.close();
      }
    }
  }

  private static String[] fields(String line, String word, int count) throws IOException {
    String[] fields = line == null ? new String[0] : line.split(" ");
    if (fields.length != count || !fields[0].equals(word)) {
      throw new IOException("the worker said '" + line + "' where a " + word + " line belongs");
    }
    return fields;
  }

  private static int number(String text, long max) throws IOException {
    long n;
    try {
      n = Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new IOException("the worker sent '" + text + "' for a number");
    }
    if (n < 0 || n > max) {
      throw new IOException("the worker sent " + n + " where 0.." + max + " belongs");
    }
    return (int) Math.min(n, Integer.MAX_VALUE);
  }

  /** A mapped slice as a channel, so that Arrow's message reader copies from it once. */
  private static final class BufferChannel implements ReadableByteChannel {

    private final ByteBuffer source;

    BufferChannel(ByteBuffer source) {
      this.source = source;
    }

    @Override
    public int read(ByteBuffer target) {
      if (!source.hasRemaining()) {
        return -1;
      }
      int n = Math.min(target.remaining(), source.remaining());
      ByteBuffer part = source.duplicate();
      part.limit(part.position() + n);
      target.put(part);
      source.position(source.position() + n);
      return n;
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {
      // The mapping is the ring's.
    }
  }
}
