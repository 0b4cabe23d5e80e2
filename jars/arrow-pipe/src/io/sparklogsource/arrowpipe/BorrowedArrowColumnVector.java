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
 *       so a value of at most 18 digits is its low 8 bytes, read as a signed long.
 * </ul>
 *
 * Struct children are wrapped the same way, so nested fields (a row image's columns) get both changes.
 */
final class BorrowedArrowColumnVector extends ArrowColumnVector {

  private static final int DECIMAL_BYTES = 16;
  private static final int LONG_DIGITS = 18;

  private final DecimalVector decimals;
  private final BorrowedArrowColumnVector[] children;

  BorrowedArrowColumnVector(ValueVector vector) {
    super(vector);
    decimals = vector instanceof DecimalVector ? (DecimalVector) vector : null;
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
    if (decimals == null || precision > LONG_DIGITS) {
      return super.getDecimal(rowId, precision, scale);
    }
    if (decimals.isNull(rowId)) {
      return null;
    }
    long unscaled = decimals.getDataBuffer().getLong((long) rowId * DECIMAL_BYTES);
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
