"""Support of the view=space streaming tests: a writer of multi-statement transactions, a dict target kept with
``apply_changes`` (the sink function), and the server's content to compare it with."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from spark_logsource.api import make_format
from spark_logsource.streaming.stream import Offset, ReadBudget, offset_json
from spark_logsource.tarantool.table.apply import apply_changes, space_spec
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.tarantool_typed import plain_row

CREATE = ("box.schema.space.create('{name}', {{format = {{{{'id', 'unsigned'}}, {{'name', 'string'}}, "
          "{{'n', 'integer'}}}}}}) box.space.{name}:create_index('pk') "
          "box.space.{name}:create_index('by_name', {{parts = {{'name'}}, unique = true}})")


def create_space(server: LiveTarantool, name: str) -> None:
    server.eval(CREATE.format(name=name))


def transactions(server: LiveTarantool, space: str, rng: random.Random, count: int, base: int) -> None:
    """``count`` transactions of 1 to 5 statements of every kind on ids ``base .. base + 30``, in one Lua call."""
    lines = []
    for _ in range(count):
        stmts = []
        for _ in range(rng.randint(1, 5)):
            i = base + rng.randint(0, 30)
            kind = rng.choice(("insert", "replace", "update", "upsert", "delete", "delete_by_name"))
            if kind == "insert":
                stmts.append(f"if s:get({i}) == nil then s:insert{{{i}, 'r{i}', {rng.randint(-9, 9)}}} end")
            elif kind == "replace":
                stmts.append(f"s:replace{{{i}, 'r{i}', {rng.randint(-99, 99)}}}")
            elif kind == "update":
                stmts.append(f"s:update({i}, {{{{'+', 3, {rng.randint(1, 5)}}}, {{'=', 2, 'r{i}'}}}})")
            elif kind == "upsert":
                stmts.append(f"s:upsert({{{i}, 'r{i}', 1}}, {{{{'-', 'n', {rng.randint(1, 3)}}}}})")
            elif kind == "delete":
                stmts.append(f"s:delete({i})")
            else:
                stmts.append(f"s.index.by_name:delete('r{i}')")
        lines.append("box.begin() " + " ".join(stmts) + " box.commit()")
    server.eval(f"local s = box.space.{space} " + " ".join(lines))


def server_rows(server: LiveTarantool, space: str, names: list[str]) -> dict[int, dict[str, Any]]:
    """``box.space.X:select()`` as dicts by field name (a field a tuple lacks is None)."""
    tuples = server.json(f"box.space.{space}:select()")
    return {t[0]: {n: (t[k] if k < len(t) else None) for k, n in enumerate(names)} for t in tuples}


class DictTarget:
    """A copy of the space as dicts by primary key, kept with ``apply_changes`` batch after batch."""

    def __init__(self, directory: str, space: str, *, fixed: bool = False) -> None:
        self.directory = directory
        self.space = space
        self.fixed = fixed  # keep the format of the first batch (the space may be gone later)
        self.spec: Any = None
        self.rows: dict[int, dict[str, Any]] = {}  # id → the target's row (Arrow cells, variants raw)
        self.seqs: list[int] = []

    def apply(self, batch: pa.Table) -> None:
        if not batch.num_rows:
            return
        self.seqs.extend(batch.column("seq").to_pylist())
        if self.spec is None or not self.fixed:
            self.spec = space_spec(self.directory, self.space)  # the format the directory knows now
        spec = self.spec
        schema = spec.schema()
        current = pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in self.rows.values()],
                                       schema=schema)
        result = apply_changes(spec, batch, current)
        assert not result.errors
        if result.truncated_at is not None:
            self.rows = {k: r for k, r in self.rows.items() if r["seq"] >= result.truncated_at}
        for key in result.deletes.column("id").to_pylist():
            self.rows.pop(key, None)
        for row in result.upserts.to_pylist():
            self.rows[row["id"]] = row

    def plain(self, names: list[str]) -> dict[int, dict[str, Any]]:
        return {k: {n: plain_row(r).get(n) for n in names} for k, r in self.rows.items()}


def stream_of(directory: str, **options: Any) -> Any:
    return make_format("tarantool-xlog", directory, {"mode": "FAILFAST", **options}).stream()


def drain(stream: Any, start: Offset, budget: ReadBudget, sink: Callable[[pa.Table], None],
          committed: list[Offset] | None = None) -> Offset:
    """Micro-batches as Spark runs them (latest, plan, read every slice, commit) until nothing new is complete;
    the last committed offset (each one also appended to ``committed``, for a drain that raises)."""
    committed = [] if committed is None else committed
    committed.append(start)
    while True:
        end = stream.latest_offset(start, budget)
        if offset_json(end) == offset_json(start):
            return start
        batches = [b for s in stream.plan(start, end) for b in stream.read_slice(s)]
        sink(pa.Table.from_batches(batches, schema=stream.schema()))
        stream.commit(end)
        start = json.loads(offset_json(end))
        committed.append(start)  # through JSON, as Spark's offset log keeps it
