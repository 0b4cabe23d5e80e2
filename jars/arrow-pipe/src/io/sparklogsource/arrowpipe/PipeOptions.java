package io.sparklogsource.arrowpipe;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.spark.SparkEnv;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * What the Python planner passes: the format (pickled once), one opaque split per task ({@code split.0},
 * {@code split.1}, ...) and a label for plans. The planner refuses formats holding a credential.
 *
 * <p>Which program a task runs is not an option: the interpreter is the one pyspark would give its own workers,
 * chosen on the driver as pyspark chooses it ({@code spark.pyspark.python}, then the driver's {@code PYSPARK_PYTHON},
 * then {@code python3}), and the module is {@link #WORKER_MODULE}, unless the static
 * setting {@code spark.logsource.arrowPipe.extraModules} (fixed when the application starts, out of reach of SQL's
 * {@code SET}) lists another one, as the tests do for their misbehaving workers.
 */
final class PipeOptions implements Serializable {

  private static final long serialVersionUID = 1L;

  static final String WORKER_MODULE = "spark_logsource.arrow.pipe";
  static final String EXTRA_MODULES = "spark.logsource.arrowPipe.extraModules";

  final String python;
  final String module;
  final String label;
  final String format;
  final List<String> splits;
  /** Batches through the worker's shared-memory ring when it can be mapped ({@link RingBatches}), else a stream. */
  final boolean ring;

  private PipeOptions(String python, String module, String label, String format, List<String> splits,
      boolean ring) {
    this.python = python;
    this.module = module;
    this.label = label;
    this.format = format;
    this.splits = splits;
    this.ring = ring;
  }

  static PipeOptions from(CaseInsensitiveStringMap options) {
    String count = options.get("splits");
    String format = options.get("format");
    if (count == null || format == null) {
      throw new IllegalArgumentException(
          ArrowPipeSource.NAME + " reads only what spark_logsource.spark.columnar.read_columnar planned");
    }
    int n = Integer.parseInt(count);
    List<String> splits = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String split = options.get("split." + i);
      if (split == null) {
        throw new IllegalArgumentException(ArrowPipeSource.NAME + ": split." + i + " is missing");
      }
      splits.add(split);
    }
    String module = options.getOrDefault("module", WORKER_MODULE);
    if (!module.equals(WORKER_MODULE) && !allowedModules().contains(module)) {
      throw new IllegalArgumentException(ArrowPipeSource.NAME + ": worker module " + module + " is not "
          + WORKER_MODULE + " and not listed in " + EXTRA_MODULES);
    }
    String transport = options.getOrDefault("transport", "ring");
    if (!transport.equals("ring") && !transport.equals("stream")) {
      throw new IllegalArgumentException(ArrowPipeSource.NAME + ": transport is ring or stream, not " + transport);
    }
    return new PipeOptions(python(), module, options.getOrDefault("label", ""), format,
        Collections.unmodifiableList(splits), transport.equals("ring"));
  }

  private static List<String> allowedModules() {
    SparkEnv env = SparkEnv.get();
    String listed = env == null ? "" : env.conf().get(EXTRA_MODULES, "");
    List<String> modules = new ArrayList<>();
    for (String module : listed.split(",")) {
      if (!module.isBlank()) {
        modules.add(module.strip());
      }
    }
    return modules;
  }

  /** pyspark's own choice of interpreter for its workers, made on the driver (where this is built). */
  private static String python() {
    SparkEnv env = SparkEnv.get();
    String conf = env == null ? null : env.conf().get("spark.pyspark.python", null);
    if (conf != null && !conf.isEmpty()) {
      return conf;
    }
    String variable = System.getenv("PYSPARK_PYTHON");
    return variable == null || variable.isEmpty() ? "python3" : variable;
  }
}
