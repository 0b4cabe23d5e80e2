"""The offsets of a stream's snapshot phase: the plan (position T, layout, chunk boundaries) and how many chunks are
read, as JSON (``docs/formats/mysql-snapshot.md`` "Streaming from a snapshot").

Everything a restarted query needs is in the offset, so it reads the same chunks of the same plan from Spark's
offset log alone: T and the server's identity, the table's layout and column facts at T, the primary key, the
chunk boundaries (the server's text of each key column; bytes as hex) and the replica ids of the chunks' binlog
reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.mysql.position import BinlogPosition, GtidState, binlog_number
from spark_logsource.mysql.snapshot.plan import Chunk, SnapshotPlan
from spark_logsource.mysql.snapshot.values import Column
from spark_logsource.mysql.table.follow import TableState, layout_from_json, layout_to_json

__all__ = ["KIND", "SnapshotOffset", "is_snapshot_offset"]

#: ``kind`` of a snapshot-phase offset (a binlog offset's kind is ``mariadb`` or ``mysql``).
KIND = "mysql-snapshot"


def is_snapshot_offset(offset: Mapping[str, Any]) -> bool:
    return offset.get("kind") == KIND


def _bound_to_json(bound: tuple[Any, ...] | None) -> list[Any] | None:
    if bound is None:
        return None
    return [{"hex": v.hex()} if isinstance(v, bytes | bytearray) else v for v in bound]


def _bound_from_json(doc: Any) -> tuple[Any, ...] | None:
    if doc is None:
        return None
    return tuple(bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in doc)


@dataclass(frozen=True, slots=True)
class SnapshotOffset:
    """A place in the snapshot phase: ``done`` chunks of ``plan`` are read; ``identity`` is the server's
    ``(kind, server_id, server_uuid)``, as binlog offsets name it."""

    plan: SnapshotPlan
    identity: tuple[str, int | None, str | None]
    done: int

    def to_offset(self) -> dict[str, Any]:
        """The JSON object, keys in a fixed order (Spark compares offsets as text)."""
        plan = self.plan
        kind, server_id, uuid = self.identity
        return {
            "v": 1, "kind": KIND, "server": [kind, server_id, uuid],
            "at": {"file": plan.file, "pos": plan.pos, "gtid": plan.gtid},
            "name": [plan.database, plan.table],
            "layout": layout_to_json(plan.layout),
            "columns": [[c.data_type, c.charset, c.collation] for c in plan.columns],
            "key": list(plan.key),
            "chunks": [[_bound_to_json(c.lo), _bound_to_json(c.hi)] for c in plan.chunks],
            "server_id_base": plan.server_id_base,
            "done": self.done,
        }

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any], source: str, *, option: str = "offset") -> SnapshotOffset:
        """The offset's plan; OptionError naming ``option`` when it is not a snapshot offset this reader writes."""
        if not is_snapshot_offset(offset) or offset.get("v") != 1:
            raise OptionError(option, f"not a snapshot offset of this reader: {str(dict(offset))[:200]}")
        try:
            kind, server_id, uuid = offset["server"]
            at = offset["at"]
            database, table = (str(n) for n in offset["name"])
            layout = layout_from_json(offset["layout"])
            columns = tuple(Column(spec, str(t), cs, co)
                            for spec, (t, cs, co) in zip(layout.columns, offset["columns"], strict=True))
            key = tuple(int(i) for i in offset["key"])
            chunks = tuple(Chunk(i, _bound_from_json(lo), _bound_from_json(hi))
                           for i, (lo, hi) in enumerate(offset["chunks"]))
            done = int(offset["done"])
            if not chunks or not 0 <= done <= len(chunks) or any(i >= len(columns) for i in key):
                raise ValueError("chunks, done or key out of range")
            gtid = (GtidState.parse(at["gtid"], option=option).text() or None) if at["gtid"] else None
            plan = SnapshotPlan(source, int(server_id), database, table, str(at["file"]), int(at["pos"]), gtid,
                                layout, columns, key, chunks, int(offset["server_id_base"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OptionError(option, f"the snapshot offset is not one this reader writes: {exc}") from None
        return cls(plan, (str(kind), server_id if server_id is None else int(server_id), uuid), done)

    def moved(self, done: int) -> SnapshotOffset:
        return SnapshotOffset(self.plan, self.identity, done)

    def same_plan(self, other: SnapshotOffset) -> bool:
        a, b = self.plan, other.plan
        return (a.file, a.pos, a.chunks, a.layout, self.identity) == (b.file, b.pos, b.chunks, b.layout,
                                                                        other.identity)

    def position(self) -> BinlogPosition:
        """T as a binlog position: where the change stream starts once every chunk is read."""
        kind, server_id, uuid = self.identity
        return BinlogPosition(kind, server_id, uuid, self.plan.file, self.plan.pos, self.plan.gtid)

    def table_state(self) -> TableState:
        """The table at T: the layout the plan read (``SHOW CREATE TABLE`` in T's read view)."""
        return TableState(self.plan.database, self.plan.table, self.plan.layout)

    def sort_key(self) -> tuple[str, int, int, int, int]:
        """Before T's binlog position (so before every change), in the order of the chunks."""
        prefix, number = binlog_number(self.plan.file)
        return prefix, number, self.plan.pos, 0, self.done

    def describe(self) -> str:
        return f"snapshot of {self.plan.name} at {self.plan.position}, {self.done} of {len(self.plan.chunks)} chunks"
