package io.sparklogsource.arrowpipe;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * An Arrow column of one batch as Spark reads it. Three changes to Spark's own {@link ArrowColumnVector}:
 *
 * <ul>
 *   <li>Spark may close it without freeing it: the task's {@code VectorSchemaRoot} owns the vectors and
 *       loads the next batch into them, and Spark closes each batch it is done with.
 *   <li>The flat types our formats write (integers, floats, booleans, dates, microsecond timestamps, decimal128,
 *       strings and binaries with int32 offsets, and structs of them) are read straight from the buffers'
 *       addresses, as Spark reads its own off-heap vectors. Spark's accessor goes through Arrow's checked getters
 *       (a bounds check and a reference-count read per value): on typed rows that was about half of the JVM's
 *       time (docs/spark-speed.md). The bounds are checked once per batch instead, when the vector is wrapped: every
 *       buffer read holds the batch's rows, and a string column's offsets start at or after 0, never go back, and
 *       end within its data. A batch that fails a check fails the task ({@link MalformedBatch}); a vector of
 *       another type keeps Spark's accessor.
 *   <li>A decimal of at most 18 digits is read as the {@code long} it is, into {@link Decimal#createUnsafe}, where
 *       Spark's accessor builds a {@code java.math.BigDecimal} for every value. Arrow's decimal128 is a 16-byte
 *       little-endian two's-complement integer, so a value of at most 18 digits is its low 8 bytes, read as a
 *       signed long. The fast path is taken only when the vector's precision is at most 18, its scale is the one
 *       Spark asks for, the high 8 bytes are the low ones' sign, and the value has at most the asked digits;
 *       anything else goes through Spark's path.
 * </ul>
 *
 * Struct children are wrapped the same way, so nested fields (a row image's columns) get all three. Values are read
 * in the machine's byte order, which is Arrow's little-endian one on the machines Spark runs on (x86-64, AArch64),
 * as our decoders' kernels also assume.
 */
final class BorrowedArrowColumnVector extends ArrowColumnVector {

  private static final int DECIMAL_BYTES = 16;
  /** {@link #kind} of booleans, floats, doubles, strings and binaries (the integer kinds are their widths). */
  private static final int BITS = -1;
  private static final int FLOATS = -4;
  private static final int DOUBLES = -8;
  private static final int STRINGS = -16;
  private static final int BINARIES = -17;
  private static final int LONG_DIGITS = 18;
  private static final long[] POWERS_OF_TEN = new long[LONG_DIGITS + 1];

  static {
    POWERS_OF_TEN[0] = 1;
    for (int i = 1; i <= LONG_DIGITS; i++) {
      POWERS_OF_TEN[i] = POWERS_OF_TEN[i - 1] * 10;
    }
  }

  /** Values are read from addresses (every check passed); else Spark's checked accessor reads them. */
  private final boolean direct;
  /**
   * What a value is: bytes per value of an integer, date, timestamp or decimal vector, {@link #BITS},
   * {@link #FLOATS}, {@link #DOUBLES}, {@link #STRINGS}, {@link #BINARIES}, else 0 (a struct). Each getter reads
   * from addresses only for its own kind: a getter of another type (a worker that wrote another type than Spark
   * was told) keeps Spark's path, which refuses it.
   */
  private final int kind;
  /** The validity bitmap's address, or 0 when no row is null. */
  private final long validity;
  /** The values' address: fixed-width data, bit-packed booleans, or a string column's bytes. */
  private final long data;
  /** A string or binary column's int32 offsets' address, else 0. */
  private final long offsets;
  private final int nulls;
  /** Digits of the vector's decimals when at most 18 (each value a long in its low 8 bytes), else 0. */
  private final int longDecimalPrecision;
  private final int decimalScale;
  private final BorrowedArrowColumnVector[] children;

  /** {@code vector} as one batch of {@code rows} rows. */
  BorrowedArrowColumnVector(ValueVector vector, int rows) {
    super(vector);
    if (vector instanceof StructVector) {
      StructVector struct = (StructVector) vector;
      children = new BorrowedArrowColumnVector[struct.size()];
      for (int i = 0; i < children.length; i++) {
        children[i] = new BorrowedArrowColumnVector(struct.getVectorById(i), rows);
      }
    } else {
      children = null;
    }
    int width = fixedWidth(vector);
    boolean varWidth = vector instanceof VarCharVector || vector instanceof VarBinaryVector;
    direct = width != 0 || varWidth || vector instanceof BitVector || vector instanceof StructVector;
    nulls = vector.getNullCount();
    if (direct) {
      String flaw = flaw(vector, rows, width, varWidth, nulls);
      if (flaw != null) {
        throw new MalformedBatch(vector.getName() + ": " + flaw);
      }
    }
    data = direct && (width != 0 || varWidth || vector instanceof BitVector)
        ? vector.getDataBuffer().memoryAddress() : 0;
    offsets = direct && varWidth ? vector.getOffsetBuffer().memoryAddress() : 0;
    kind = vector instanceof BitVector ? BITS
        : vector instanceof Float4Vector ? FLOATS : vector instanceof Float8Vector ? DOUBLES
        : vector instanceof VarCharVector ? STRINGS : vector instanceof VarBinaryVector ? BINARIES : width;
    validity = direct && nulls != 0 ? vector.getValidityBuffer().memoryAddress() : 0;
    DecimalVector decimals = vector instanceof DecimalVector ? (DecimalVector) vector : null;
    // Only where the Arrow vector itself holds at most 18 digits: then every value is a long, whatever Spark asks.
    longDecimalPrecision = decimals != null && decimals.getPrecision() <= LONG_DIGITS ? decimals.getPrecision() : 0;
    decimalScale = decimals != null ? decimals.getScale() : 0;
  }

  /**
   * Why the buffers of {@code vector} cannot hold {@code rows} rows, or null when they can. Spark's own accessor
   * checks a string's offsets against the offsets buffer but not against the data, so a damaged batch would be
   * read from beyond it: such a batch fails the task instead.
   */
  private static String flaw(ValueVector vector, int rows, int width, boolean varWidth, int nulls) {
    if (rows < 0 || vector.getValueCount() < rows) {
      return vector.getValueCount() + " values in a batch of " + rows + " rows";
    }
    if (nulls != 0 && !holds(vector.getValidityBuffer(), bitmapBytes(rows))) {
      return "its validity bitmap is shorter than " + rows + " rows";
    }
    if (width != 0 && !holds(vector.getDataBuffer(), (long) rows * width)) {
      return "its data is shorter than " + rows + " values of " + width + " bytes";
    }
    if (vector instanceof BitVector && !holds(vector.getDataBuffer(), bitmapBytes(rows))) {
      return "its bits are shorter than " + rows + " values";
    }
    if (varWidth && !offsetsWithin(vector.getOffsetBuffer(), vector.getDataBuffer(), rows)) {
      return "its offsets go back or past its data";
    }
    return null;
  }

  /** Bytes per value of the fixed-width vectors read from addresses, else 0. */
  private static int fixedWidth(ValueVector vector) {
    if (vector instanceof TinyIntVector) {
      return Byte.BYTES;
    }
    if (vector instanceof SmallIntVector) {
      return Short.BYTES;
    }
    if (vector instanceof IntVector || vector instanceof DateDayVector || vector instanceof Float4Vector) {
      return Integer.BYTES;
    }
    if (vector instanceof BigIntVector || vector instanceof Float8Vector || vector instanceof TimeStampMicroVector
        || vector instanceof TimeStampMicroTZVector) {
      return Long.BYTES;
    }
    if (vector instanceof DecimalVector) {
      return DECIMAL_BYTES;
    }
    return 0;
  }

  private static long bitmapBytes(int rows) {
    return ((long) rows + 7) / 8;
  }

  private static boolean holds(ArrowBuf buffer, long bytes) {
    return buffer != null && buffer.capacity() >= bytes && (bytes == 0 || buffer.memoryAddress() != 0);
  }

  /** Whether the first {@code rows + 1} offsets start at or after 0, never go back, and end within the data. */
  private static boolean offsetsWithin(ArrowBuf offsetBuffer, ArrowBuf dataBuffer, int rows) {
    if (!holds(offsetBuffer, ((long) rows + 1) * Integer.BYTES) || dataBuffer == null) {
      return false;
    }
    long address = offsetBuffer.memoryAddress();
    int previous = Platform.getInt(null, address);
    if (previous < 0) {
      return false;
    }
    for (int i = 1; i <= rows; i++) {
      int end = Platform.getInt(null, address + (long) i * Integer.BYTES);
      if (end < previous) {
        return false;
      }
      previous = end;
    }
    return previous == 0 || holds(dataBuffer, previous);
  }

  @Override
  public boolean hasNull() {
    return direct ? nulls > 0 : super.hasNull();
  }

  @Override
  public int numNulls() {
    return direct ? nulls : super.numNulls();
  }

  @Override
  public boolean isNullAt(int rowId) {
    if (!direct) {
      return super.isNullAt(rowId);
    }
    return validity != 0 && (Platform.getByte(null, validity + (rowId >> 3)) >> (rowId & 7) & 1) == 0;
  }

  @Override
  public boolean getBoolean(int rowId) {
    if (!direct || kind != BITS) {
      return super.getBoolean(rowId);
    }
    return (Platform.getByte(null, data + (rowId >> 3)) >> (rowId & 7) & 1) != 0;
  }

  @Override
  public byte getByte(int rowId) {
    return direct && kind == Byte.BYTES
        ? Platform.getByte(null, data + rowId) : super.getByte(rowId);
  }

  @Override
  public short getShort(int rowId) {
    return direct && kind == Short.BYTES
        ? Platform.getShort(null, data + (long) rowId * Short.BYTES) : super.getShort(rowId);
  }

  @Override
  public int getInt(int rowId) {
    return direct && kind == Integer.BYTES
        ? Platform.getInt(null, data + (long) rowId * Integer.BYTES) : super.getInt(rowId);
  }

  @Override
  public long getLong(int rowId) {
    return direct && kind == Long.BYTES
        ? Platform.getLong(null, data + (long) rowId * Long.BYTES) : super.getLong(rowId);
  }

  @Override
  public float getFloat(int rowId) {
    return direct && kind == FLOATS
        ? Platform.getFloat(null, data + (long) rowId * Float.BYTES) : super.getFloat(rowId);
  }

  @Override
  public double getDouble(int rowId) {
    return direct && kind == DOUBLES
        ? Platform.getDouble(null, data + (long) rowId * Double.BYTES) : super.getDouble(rowId);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (!direct || kind != STRINGS) {
      return super.getUTF8String(rowId);
    }
    if (isNullAt(rowId)) {
      return null;
    }
    long at = offsets + (long) rowId * Integer.BYTES;
    int start = Platform.getInt(null, at);
    return UTF8String.fromAddress(null, data + start, Platform.getInt(null, at + Integer.BYTES) - start);
  }

  @Override
  public byte[] getBinary(int rowId) {
    if (!direct || kind != BINARIES) {
      return super.getBinary(rowId);
    }
    if (isNullAt(rowId)) {
      return null;
    }
    long at = offsets + (long) rowId * Integer.BYTES;
    int start = Platform.getInt(null, at);
    byte[] value = new byte[Platform.getInt(null, at + Integer.BYTES) - start];
    Platform.copyMemory(null, data + start, value, Platform.BYTE_ARRAY_OFFSET, value.length);
    return value;
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (!direct || kind != DECIMAL_BYTES || longDecimalPrecision == 0 || precision > LONG_DIGITS
        || scale != decimalScale) {
      return super.getDecimal(rowId, precision, scale);
    }
    if (isNullAt(rowId)) {
      return null;
    }
    long at = data + (long) rowId * DECIMAL_BYTES;
    long unscaled = Platform.getLong(null, at);
    if (Platform.getLong(null, at + Long.BYTES) != (unscaled >> 63)
        || unscaled <= -POWERS_OF_TEN[precision] || unscaled >= POWERS_OF_TEN[precision]) {
      // Not a value of this precision (a damaged one): Spark's own path, which refuses it.
      return super.getDecimal(rowId, precision, scale);
    }
    return Decimal.createUnsafe(unscaled, precision, scale);
  }

  @Override
  public ArrowColumnVector getChild(int ordinal) {
    return children == null ? super.getChild(ordinal) : children[ordinal];
  }

  /** A batch whose buffers cannot hold its rows (a worker that lies or is broken): the task fails. */
  static final class MalformedBatch extends RuntimeException {

    private static final long serialVersionUID = 1L;

    MalformedBatch(String message) {
      super(message);
    }
  }

  @Override
  public void close() {
    // The vectors belong to the task's batches (Batches), which free them in PipeReader.close().
  }
}
