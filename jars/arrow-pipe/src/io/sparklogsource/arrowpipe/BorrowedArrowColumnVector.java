package io.sparklogsource.arrowpipe;

import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ArrowColumnVector;

/**
 * An Arrow column as Spark reads it, with two changes to Spark's own {@link ArrowColumnVector}:
 *
 * <ul>
 *   <li>Spark may close it without freeing it: the stream reader's {@code VectorSchemaRoot} owns the vectors and
 *       loads the next batch into them, and Spark closes each batch it is done with.
 *   <li>A decimal of at most 18 digits is read as the {@code long} it is, into {@link Decimal#createUnsafe}, where
 *       Spark's accessor builds a {@code java.math.BigDecimal} for every value (a quarter of the JVM's time on
 *       typed rows, docs/spark-speed.md). Arrow's decimal128 is a 16-byte little-endian two's-complement integer,
 *       so a value of at most 18 digits is its low 8 bytes, read as a signed long. The fast path is taken only
 *       when the vector's precision is at most 18, its scale is the one Spark asks for, the high 8 bytes are the
 *       low ones' sign, and the value has at most the asked digits; anything else goes through Spark's path.
 * </ul>
 *
 * Struct children are wrapped the same way, so nested fields (a row image's columns) get both changes.
 */
final class BorrowedArrowColumnVector extends ArrowColumnVector {

  private static final int DECIMAL_BYTES = 16;
  private static final int LONG_DIGITS = 18;
  private static final long[] POWERS_OF_TEN = new long[LONG_DIGITS + 1];

  static {
    POWERS_OF_TEN[0] = 1;
    for (int i = 1; i <= LONG_DIGITS; i++) {
      POWERS_OF_TEN[i] = POWERS_OF_TEN[i - 1] * 10;
    }
  }

  private final DecimalVector decimals;
  private final BorrowedArrowColumnVector[] children;

  BorrowedArrowColumnVector(ValueVector vector) {
    super(vector);
    // Only where the Arrow vector itself holds at most 18 digits: then every value is a long, whatever Spark asks.
    decimals = vector instanceof DecimalVector && ((DecimalVector) vector).getPrecision() <= LONG_DIGITS
        ? (DecimalVector) vector : null;
    if (vector instanceof StructVector) {
      StructVector struct = (StructVector) vector;
      children = new BorrowedArrowColumnVector[struct.size()];
      for (int i = 0; i < children.length; i++) {
        children[i] = new BorrowedArrowColumnVector(struct.getVectorById(i));
      }
    } else {
      children = null;
    }
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (decimals == null || precision > LONG_DIGITS || scale != decimals.getScale()) {
      return super.getDecimal(rowId, precision, scale);
    }
    if (decimals.isNull(rowId)) {
      return null;
    }
    long offset = (long) rowId * DECIMAL_BYTES;
    long unscaled = decimals.getDataBuffer().getLong(offset);
    if (decimals.getDataBuffer().getLong(offset + Long.BYTES) != (unscaled >> 63)
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

  @Override
  public void close() {
    // The vectors belong to the stream reader, which frees them in PipeReader.close().
  }
}
