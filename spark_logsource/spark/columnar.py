"""``read_columnar``: a batch read through the columnar JVM reader (``jars/arrow-pipe``) instead of a Python data
source.

The Python data source hands Spark each Arrow batch through pyspark's worker, and Spark copies it into rows one
by one; the JVM reader reads the same batches as columnar batches (``docs/spark-speed.md``, "The columnar JVM
reader"). Planning stays ours and stays on the driver: the format lists and plans its splits here, and each Spark
task lends a Python worker that decodes its split (:mod:`spark_logsource.arrow.pipe`).

Only log files are read this way, and only without credentials: the format travels pickled in Spark's options,
so a format holding a password (a ``schemaFrom`` server, say) or a path carrying a secret in its query string is
refused. Cloud storage credentials belong to the environment (``docs/ARCHITECTURE.md``, io/fs.py), not the path.
"""

from __future__ import annotations

import io
import os
import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from spark_logsource.api import make_format
from spark_logsource.arrow.pipe import encode_pickled, encode_split
from spark_logsource.errors import OptionError
from spark_logsource.logformat import LogFormat
from spark_logsource.net import Secret
from spark_logsource.spark.schema import spark_schema

#: The JVM data source's name (``jars/arrow-pipe``, registered through its service file).
JVM_SOURCE = "logsource-arrow-pipe"
#: Formats read from log files.
FILE_FORMATS = ("tarantool-xlog", "mysql-binlog", "yugabyte-wal")
#: What each task's Python worker runs (:mod:`spark_logsource.arrow.pipe`); another module must be listed in the
#: static Spark setting ``spark.logsource.arrowPipe.extraModules`` (the tests' misbehaving workers).
WORKER_MODULE = "spark_logsource.arrow.pipe"
#: Where ``jars/arrow-pipe/build.sh`` puts the jar in a source tree.
_TREE_JAR = Path(__file__).resolve().parents[2] / "jars" / "arrow-pipe.jar"
#: Query-string keys that name a secret (Azure's ``client_secret``, an S3 ``secret_key``, a SAS ``sig``, ...).
_SECRET_KEY = re.compile(r"secret|password|passwd|token|key|credential|sig", re.IGNORECASE)


def arrow_pipe_jar() -> str | None:
    """The built jar's path (for ``spark.jars``), or None when it was not built (``jars/arrow-pipe/build.sh``, run
    by ``scripts/setup.sh`` in a source checkout; a pip-installed package carries no jar)."""
    env = os.environ.get("SPARK_LOGSOURCE_ARROW_PIPE_JAR")
    if env:
        return env if os.path.isfile(env) else None
    return str(_TREE_JAR) if _TREE_JAR.is_file() else None


def read_columnar(spark: Any, fmt: str, paths: str | Sequence[str], *, worker_module: str = WORKER_MODULE,
                  transport: str = "ring", **options: Any) -> Any:
    """``spark.read.format(fmt).options(**options).load(paths)``, read by the columnar JVM reader.

    Same rows, same schema; Spark applies every filter itself and prunes top-level columns before they leave the
    Python worker. The session needs the jar on its class path (``spark.jars``, :func:`arrow_pipe_jar`).
    ``transport``: ``ring`` (batches through shared memory where the executor can map the worker's memory files,
    else a pipe) or ``stream`` (always the pipe).
    """
    if transport not in ("ring", "stream"):
        raise OptionError("transport", f"ring or stream, not {transport!r}")
    name = fmt.lower()
    if name not in FILE_FORMATS:
        raise OptionError("format", f"read_columnar reads log files ({', '.join(FILE_FORMATS)}), not {fmt!r}")
    for path in [paths] if isinstance(paths, str) else paths:
        refuse_secret_in_path(str(path))
    for key, value in options.items():  # before the format is built: building it may connect with them
        if key.lower() == "password":
            raise OptionError(key, "read_columnar does not carry credentials (the format travels pickled in "
                              "Spark's options): read with spark.read.format(...) instead")
        if "://" in str(value):
            refuse_secret_in_path(str(value))
    log_format = make_format(name, paths, options)
    splits = log_format.plan(log_format.list_files())
    schema = spark_schema(log_format.schema())
    pickled = pickled_without_secrets(log_format)  # after planning: what the tasks get is what was checked
    reader = spark.read.format(JVM_SOURCE).schema(schema)
    reader = reader.option("module", worker_module).option("format", encode_pickled(pickled))
    reader = reader.option("splits", str(len(splits))).option("transport", transport)
    reader = reader.option("label", f"{name}, {len({s.uri for s in splits})} files")
    for i, split in enumerate(splits):
        reader = reader.option(f"split.{i}", encode_split(split))
    try:
        return reader.load()
    except Exception as exc:
        if JVM_SOURCE in str(exc) and ("DATA_SOURCE_NOT_FOUND" in str(exc) or "ClassNotFound" in str(exc)):
            raise OptionError("spark.jars", f"the columnar JVM reader ({JVM_SOURCE}) is not on this session's class "
                              f"path: start the session with spark.jars={arrow_pipe_jar() or '<jars/arrow-pipe.jar>'}"
                              " (jars/arrow-pipe/build.sh builds it)") from exc
        raise


def refuse_secret_in_path(path: str) -> None:
    """A path with a password, a secret-looking query parameter (pyarrow reads credentials from a URI's query, as
    Azure's ``client_secret``) or, for http/https, a user name (a token) would travel in Spark's options: refused.
    A ``?`` followed by more path (``dt=2024-01-0?/shard_key=3/``) is a glob wildcard, not a query."""
    parts = urlsplit(path)
    web = parts.scheme.lower() in ("http", "https")
    is_query = bool(parts.query) and (web or "/" not in parts.query)
    query_secret = is_query and any(_SECRET_KEY.search(key) for key, _ in parse_qsl(parts.query))
    if parts.password is not None or (web and parts.username is not None) or query_secret:
        raise OptionError("path", "read_columnar does not carry credentials in paths (they would travel in "
                          "Spark's options): give the storage its credentials through the environment")


class _SecretFinder(pickle.Pickler):
    """Pickles into ``out``, noting every :class:`Secret` met on the way (``persistent_id`` sees every object)."""

    def __init__(self, out: io.BytesIO) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.found = False

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Secret) and obj.reveal():
            self.found = True
        return None


def pickled_without_secrets(log_format: LogFormat) -> bytes:
    """``log_format`` pickled; refused if it holds a password anywhere (``schemaFrom`` a server, say): it would
    travel in Spark's options, where plans and logs show them."""
    out = io.BytesIO()
    finder = _SecretFinder(out)
    finder.dump(log_format)
    if finder.found:
        raise OptionError("password", "read_columnar does not carry credentials (the format travels pickled in "
                          "Spark's options): read with spark.read.format(...) instead")
    return out.getvalue()
