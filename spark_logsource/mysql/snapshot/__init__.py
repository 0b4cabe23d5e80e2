"""The initial snapshot of a MariaDB table: primary-key chunks read in parallel, each rolled back to one binlog
position, with no lock (``docs/formats/mysql-snapshot.md``).

:func:`plan_snapshot` (driver) takes the position and cuts the key space; :func:`read_chunk` (a task) reads one
chunk as of that position, as ``view=table`` record batches with ``op = 'r'``.
"""

from spark_logsource.mysql.snapshot.chunk import read_chunk, snapshot_schema
from spark_logsource.mysql.snapshot.plan import Chunk, SnapshotPlan, plan_snapshot

__all__ = ["Chunk", "SnapshotPlan", "plan_snapshot", "read_chunk", "snapshot_schema"]
