"""``read_columnar``: a batch read through the columnar JVM reader (``jars/arrow-pipe``) instead of a Python data
source.

The Python data source hands Spark each Arrow batch through pyspark's worker, and Spark copies it into rows one
by one; the JVM reader reads the same batches as columnar batches (``docs/spark-speed.md``, "The columnar JVM
reader"). Planning stays ours and stays on the driver: the format lists and plans its splits here, and each Spark
task starts one Python process that decodes its split (:mod:`spark_logsource.arrow.pipe`).

Only log files are read this way: a task carries its format pickled in Spark's options, so formats holding a
server's credentials are refused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from spark_logsource.api import make_format
from spark_logsource.arrow.pipe import encode_task
from spark_logsource.errors import OptionError
from spark_logsource.spark.schema import spark_schema

#: The JVM data source's name (``jars/arrow-pipe``, registered through its service file).
JVM_SOURCE = "logsource-arrow-pipe"
#: Formats read from log files: their options and splits hold no credential.
FILE_FORMATS = ("tarantool-xlog", "mysql-binlog", "yugabyte-wal")
#: What each task's Python worker runs (:mod:`spark_logsource.arrow.pipe`).
WORKER_MODULE = "spark_logsource.arrow.pipe"
#: Where ``jars/arrow-pipe/build.sh`` puts the jar in a source tree.
_TREE_JAR = Path(__file__).resolve().parents[2] / "jars" / "arrow-pipe.jar"


def arrow_pipe_jar() -> str | None:
    """The built jar's path (for ``spark.jars``), or None when it was not built (``jars/arrow-pipe/build.sh``)."""
    env = os.environ.get("SPARK_LOGSOURCE_ARROW_PIPE_JAR")
    if env:
        return env if os.path.isfile(env) else None
    return str(_TREE_JAR) if _TREE_JAR.is_file() else None


def read_columnar(spark: Any, fmt: str, paths: str | Sequence[str], *, worker_module: str = WORKER_MODULE,
                  **options: Any) -> Any:
    """``spark.read.format(fmt).options(**options).load(paths)``, read by the columnar JVM reader.

    Same rows, same schema; Spark applies every filter itself and prunes top-level columns before they leave the
    Python process. The session needs the jar on its class path (``spark.jars``, :func:`arrow_pipe_jar`).
    ``worker_module`` is the module each task's Python worker runs (tests replace it with a misbehaving one).
    """
    name = fmt.lower()
    if name not in FILE_FORMATS:
        raise OptionError("format", f"read_columnar reads log files ({', '.join(FILE_FORMATS)}), not {fmt!r}")
    for path in [paths] if isinstance(paths, str) else paths:
        if urlsplit(str(path)).password is not None:
            raise OptionError("path", "read_columnar does not carry credentials in paths: configure the storage")
    log_format = make_format(name, paths, options)
    splits = log_format.plan(log_format.list_files())
    reader = spark.read.format(JVM_SOURCE).schema(spark_schema(log_format.schema()))
    reader = reader.option("python", _executor_python(spark)).option("module", worker_module)
    reader = reader.option("tasks", str(len(splits)))
    reader = reader.option("label", f"{name}, {len({s.uri for s in splits})} files")
    for i, split in enumerate(splits):
        reader = reader.option(f"task.{i}", encode_task(log_format, split))
    try:
        return reader.load()
    except Exception as exc:
        if "DATA_SOURCE_NOT_FOUND" in str(exc) or "ClassNotFoundException" in str(exc):
            raise OptionError("spark.jars", f"the columnar JVM reader ({JVM_SOURCE}) is not on this session's class "
                              f"path: start the session with spark.jars={arrow_pipe_jar() or '<jars/arrow-pipe.jar>'}"
                              " (jars/arrow-pipe/build.sh builds it)") from None
        raise


def _executor_python(spark: Any) -> str:
    """The Python the executors run for pyspark (``spark.pyspark.python``, then ``PYSPARK_PYTHON``); empty lets each
    executor use its own ``PYSPARK_PYTHON``. In local mode the driver's interpreter is the executors' too."""
    conf = spark.conf.get("spark.pyspark.python", None)
    if conf:
        return str(conf)
    env = os.environ.get("PYSPARK_PYTHON")
    if env:
        return env
    try:
        master = str(spark.sparkContext.master)
    except Exception:  # Spark Connect has no SparkContext on the client: the server's executors choose
        return ""
    return sys.executable if master.startswith("local") else ""
