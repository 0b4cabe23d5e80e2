package io.sparklogsource.arrowpipe;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * One Python worker ({@code python -m spark_logsource.arrow.pipe}): four task lines in; the batches (through its
 * shared-memory ring, or as an Arrow IPC stream) and a status line out, task after task. Its stderr is the
 * executor's (warnings, a bug's traceback).
 */
final class PipeWorker {

  /** Longest status line read: a message is one line, an error's text. */
  private static final int STATUS_BYTES = 1 << 16;

  final String key;
  private final Process process;
  private final OutputStream stdin;
  private final BufferedInputStream stdout;
  /** Set by {@link #destroy()} (a killed task may call it from another thread): never lent again. */
  private volatile boolean destroyed;
  /** When the pool took it back ({@code System.nanoTime()}); read under the pool's lock. */
  long idleSince;

  private PipeWorker(String key, Process process) {
    this.key = key;
    this.process = process;
    this.stdin = process.getOutputStream();
    this.stdout = new BufferedInputStream(process.getInputStream(), 1 << 20);
  }

  /** Sends one task: the format, the split, the asked columns and the transport asked for, each one line. */
  void send(String format, String split, String[] columns, boolean ring) throws IOException {
    stdin.write(format.getBytes(StandardCharsets.US_ASCII));
    stdin.write('\n');
    stdin.write(split.getBytes(StandardCharsets.US_ASCII));
    stdin.write('\n');
    stdin.write(String.join("\t", columns).getBytes(StandardCharsets.UTF_8));
    stdin.write('\n');
    stdin.write((ring ? "ring" : "stream").getBytes(StandardCharsets.US_ASCII));
    stdin.write('\n');
    stdin.flush();
  }

  /** One line of the ring's exchange to the worker ({@code mapped}, {@code stream}, {@code free}). */
  void answer(String line) throws IOException {
    stdin.write(line.getBytes(StandardCharsets.US_ASCII));
    stdin.write('\n');
    stdin.flush();
  }

  /** The next byte of the worker's answer, left unread (-1 at its end). */
  int peek() throws IOException {
    stdout.mark(1);
    int b = stdout.read();
    stdout.reset();
    return b;
  }

  /** Up to the next {@code n} bytes of the worker's answer, left unread (fewer at its end). */
  byte[] peekBytes(int n) throws IOException {
    stdout.mark(n);
    byte[] bytes = stdout.readNBytes(n);
    stdout.reset();
    return bytes;
  }

  /** Exactly {@code n} bytes of the worker's answer (a schema message), or an EOFException. */
  byte[] readBytes(int n) throws IOException {
    byte[] bytes = stdout.readNBytes(n);
    if (bytes.length != n) {
      throw new java.io.EOFException("the worker's answer ended after " + bytes.length + " of " + n + " bytes");
    }
    return bytes;
  }

  static PipeWorker start(String python, String module) {
    ProcessBuilder builder = new ProcessBuilder(python, "-m", module);
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    try {
      return new PipeWorker(python + "\u0000" + module, builder.start());
    } catch (IOException e) {
      throw new PipeException("cannot start " + python + " -m " + module + ": " + e.getMessage(), e);
    }
  }

  /** The worker's stdout for one Arrow stream reader: closing it leaves the worker's pipe open for the next task. */
  InputStream stream() {
    return new FilterInputStream(stdout) {
      @Override
      public void close() {
        // The pipe belongs to the worker, which serves the next task on it.
      }
    };
  }

  /** The next line of the worker's answer (a status line after a stream's end marker, a line of the ring's
   * exchange), or null when the worker closed its stdout first. */
  String readLine() throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    while (true) {
      int b = stdout.read();
      if (b < 0) {
        return null;
      }
      if (b == '\n') {
        return line.toString(StandardCharsets.UTF_8);
      }
      if (line.size() < STATUS_BYTES) {
        line.write(b);
      }
    }
  }

  boolean isAlive() {
    return !destroyed && process.isAlive();
  }

  /** The exit status once the worker ended (waits up to a few seconds for it), else null. */
  Integer exitCode() {
    try {
      if (process.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) {
        return process.exitValue();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return null;
  }

  void destroy() {
    destroyed = true;
    process.destroyForcibly();
    try {
      stdin.close();
    } catch (IOException e) {
      // Already broken: the process is gone either way.
    }
    try {
      stdout.close();
    } catch (IOException e) {
      // As above.
    }
  }
}
