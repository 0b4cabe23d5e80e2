"""Spark data sources (Python Data Source API) for every format of the package."""

from __future__ import annotations

import logging
from typing import Any

from spark_logsource.spark.compat import is_already_registered_error
from spark_logsource.spark.sources import data_sources

log = logging.getLogger(__name__)


def register_all(spark: Any) -> None:
    """Register every format on ``spark``; safe to call again and next to Spark's own auto-registration.

    Spark imports the ``pyspark_*`` modules at start-up and registers their ``DefaultSource`` under the same names
    (``docs/ARCHITECTURE.md``, adding a format). pyspark 4.0 refuses to register such a name a second time
    (``DATA_SOURCE_ALREADY_EXISTS``): the source it holds is ours already, so that refusal is kept as success.
    pyspark 4.1+ replace the source instead; calling this twice registers the same classes again.
    """
    for cls in data_sources():
        try:
            spark.dataSource.register(cls)
        except Exception as exc:
            if not is_already_registered_error(exc):
                raise
            log.debug("data source %r already registered by Spark's auto-registration: kept", cls.name())
