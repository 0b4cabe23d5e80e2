package io.sparklogsource.arrowpipe;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * What the Python planner passes: the worker's Python and module, a label for plans, and one opaque task per
 * split ({@code task.0}, {@code task.1}, ...). The tasks hold no credential: the planner refuses formats whose
 * options carry one.
 */
final class PipeOptions implements Serializable {

  private static final long serialVersionUID = 1L;

  final String python;
  final String module;
  final String label;
  final List<String> tasks;

  private PipeOptions(String python, String module, String label, List<String> tasks) {
    this.python = python;
    this.module = module;
    this.label = label;
    this.tasks = tasks;
  }

  static PipeOptions from(CaseInsensitiveStringMap options) {
    String count = options.get("tasks");
    if (count == null) {
      throw new IllegalArgumentException(
          ArrowPipeSource.NAME + " reads only what spark_logsource.spark.columnar.read_columnar planned");
    }
    int n = Integer.parseInt(count);
    List<String> tasks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String task = options.get("task." + i);
      if (task == null) {
        throw new IllegalArgumentException(ArrowPipeSource.NAME + ": task." + i + " is missing");
      }
      tasks.add(task);
    }
    return new PipeOptions(
        options.getOrDefault("python", ""),
        options.getOrDefault("module", "spark_logsource.arrow.pipe"),
        options.getOrDefault("label", ""),
        Collections.unmodifiableList(tasks));
  }
}
