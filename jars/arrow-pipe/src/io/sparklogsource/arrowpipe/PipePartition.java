package io.sparklogsource.arrowpipe;

import org.apache.spark.sql.connector.read.InputPartition;

/** One split, as the Python planner encoded it (opaque here). */
final class PipePartition implements InputPartition {

  private static final long serialVersionUID = 1L;

  final int index;
  final String split;

  PipePartition(int index, String split) {
    this.index = index;
    this.split = split;
  }
}
