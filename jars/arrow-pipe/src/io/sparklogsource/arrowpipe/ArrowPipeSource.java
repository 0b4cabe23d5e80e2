package io.sparklogsource.arrowpipe;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A columnar DataSource V2 reader of the Arrow batches our Python decoders write.
 *
 * <p>The driver side is Python ({@code spark_logsource.spark.columnar.read_columnar}): it plans the splits with the
 * format's own planner and hands each one to this source as an opaque option. Each Spark task starts one Python
 * process ({@code python -m spark_logsource.arrow.pipe}) that decodes its split and writes Arrow IPC to its stdout;
 * the task reads those batches as {@code ColumnarBatch}es, so no row-by-row copy happens between the decoder and
 * Spark's whole-stage code. See docs/spark-speed.md, "The columnar JVM reader".
 */
public final class ArrowPipeSource implements TableProvider, DataSourceRegister {

  static final String NAME = "logsource-arrow-pipe";

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new IllegalArgumentException(
        NAME + " reads only what spark_logsource.spark.columnar.read_columnar planned: it needs that schema");
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new PipeTable(schema);
  }
}
