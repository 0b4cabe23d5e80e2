package io.sparklogsource.arrowpipe;

/** A task of the columnar reader failed: the message is the Python worker's, which names file and offset. */
public final class PipeException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  PipeException(String message, Throwable cause) {
    super(ArrowPipeSource.NAME + ": " + message, cause);
  }
}
