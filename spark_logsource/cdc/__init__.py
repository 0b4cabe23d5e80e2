"""Typed changes into tables: the flat projection, each key's last change, and an idempotent MERGE into Delta.

Spark-free (Arrow in, Arrow out); the Spark recipes (``foreachBatch`` + ``MERGE INTO``, AUTO CDC) are in
``docs/cdc.md``.
"""

from __future__ import annotations

from spark_logsource.cdc.delta import merge_into_delta
from spark_logsource.cdc.flat import flat_view, flat_view_sql, spark_to_arrow
from spark_logsource.cdc.latest import latest_changes, truncated_at

__all__ = ["flat_view", "flat_view_sql", "latest_changes", "merge_into_delta", "spark_to_arrow", "truncated_at"]
