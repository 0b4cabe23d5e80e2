package io.sparklogsource.arrowpipe;

import java.util.Iterator;
import java.util.List;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BufferLayout;
import org.apache.arrow.vector.TypeLayout;
import org.apache.arrow.vector.compression.NoCompressionCodec;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Whether a record batch's buffers can hold what its field nodes say, before Arrow loads it. Arrow's loader does not
 * ask: it grows a short buffer with a fresh one (a validity bitmap of zeros turns every row null) or fails while
 * growing and leaks what it allocated. Checked for the types our formats write (structs of integers, floats,
 * booleans, decimals, dates, timestamps, strings and binaries); a batch with any other type is left to Arrow. A
 * string column's offsets against its data are checked after loading ({@link BorrowedArrowColumnVector}).
 */
final class BatchCheck {

  private BatchCheck() {}

  /** Why {@code batch} does not fit {@code schema}, or null. */
  static String flaw(Schema schema, ArrowRecordBatch batch) {
    if (batch.getBodyCompression().getCodec() != NoCompressionCodec.COMPRESSION_TYPE) {
      return "a compressed batch (our workers write none)";
    }
    if (!schema.getFields().stream().allMatch(BatchCheck::known)) {
      return null;
    }
    Iterator<ArrowFieldNode> nodes = batch.getNodes().iterator();
    Iterator<ArrowBuf> buffers = batch.getBuffers().iterator();
    for (Field field : schema.getFields()) {
      String flaw = flaw(field, batch.getLength(), nodes, buffers);
      if (flaw != null) {
        return flaw;
      }
    }
    return nodes.hasNext() || buffers.hasNext() ? "more field nodes or buffers than its schema has" : null;
  }

  private static boolean known(Field field) {
    ArrowType type = field.getType();
    boolean flat = type instanceof ArrowType.Int || type instanceof ArrowType.FloatingPoint
        || type instanceof ArrowType.Decimal || type instanceof ArrowType.Date || type instanceof ArrowType.Timestamp
        || type instanceof ArrowType.Bool || type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary;
    return flat || type instanceof ArrowType.Struct && field.getChildren().stream().allMatch(BatchCheck::known);
  }

  private static String flaw(Field field, int rows, Iterator<ArrowFieldNode> nodes, Iterator<ArrowBuf> buffers) {
    if (!nodes.hasNext()) {
      return field.getName() + ": no field node";
    }
    ArrowFieldNode node = nodes.next();
    long length = node.getLength();
    if (length < rows || node.getNullCount() < 0 || node.getNullCount() > length) {
      return field.getName() + ": " + length + " values (" + node.getNullCount() + " null) in a batch of " + rows
          + " rows";
    }
    List<BufferLayout> layouts = TypeLayout.getTypeLayout(field.getType()).getBufferLayouts();
    boolean varWidth = field.getType() instanceof ArrowType.Utf8 || field.getType() instanceof ArrowType.Binary;
    for (int i = 0; i < layouts.size(); i++) {
      if (!buffers.hasNext()) {
        return field.getName() + ": buffer " + i + " is missing";
      }
      long size = buffers.next().capacity();
      BufferLayout layout = layouts.get(i);
      long needed;
      if (layout.getType() == BufferLayout.BufferType.VALIDITY) {
        needed = node.getNullCount() == 0 ? 0 : (length + 7) / 8;  // no nulls: Arrow may omit the bitmap
      } else if (layout.getType() == BufferLayout.BufferType.OFFSET) {
        needed = length == 0 ? 0 : (length + 1) * (layout.getTypeBitWidth() / 8);
      } else if (varWidth) {
        needed = 0;  // its bytes are as long as the offsets say, checked once they are loaded
      } else {
        needed = (length * layout.getTypeBitWidth() + 7) / 8;
      }
      if (size < needed) {
        return field.getName() + ": buffer " + i + " holds " + size + " bytes of the " + needed + " its "
            + length + " values need";
      }
    }
    for (Field child : field.getChildren()) {
      String flaw = flaw(child, rows, nodes, buffers);
      if (flaw != null) {
        return flaw;
      }
    }
    return null;
  }
}
