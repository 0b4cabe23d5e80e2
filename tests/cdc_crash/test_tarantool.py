"""``tarantool-xlog`` ``view=space`` from ``startingPosition=snapshot`` into a Delta table (``apply_changes`` and
one MERGE with the high-water mark, docs/tarantool-cdc.md) in a job of its own, checked the way a user would: a
fiber keeps committing multi-statement transactions of every kind on a real Tarantool 2.6 (and one
``space:format()`` that adds a field) while the job is SIGKILLed mid-snapshot and mid-stream and restarted on its
checkpoint (and again after the format change stopped it); at the end the Delta table equals
``box.space.X:select()``, value for value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cdc_crash.support import STOPPED, Job
from tests.support.servers.tarantool_live import LiveTarantool
from tests.support.tarantool_typed import plain_row
from tests.support.waiting import STATE_TIMEOUT, until

pytestmark = [pytest.mark.spark, pytest.mark.server]

SPACE = "cr"
NAMES = ["id", "name", "n", "note"]
BULK = 8000
#: A fiber committing transactions of 1 to 4 statements (insert, replace, update, upsert, delete, delete through the
#: unique secondary index) every 50 ms until ``w_on`` is false (then ``w_done``); ``w_fmt`` makes it add the field
#: ``note`` with ``space:format()`` between two transactions (then ``w_fmted``) and fill it afterwards.
WRITER = """
local fiber = require('fiber')
_G.w_on = true _G.w_n = 0 _G.w_done = false _G.w_fmt = false _G.w_fmted = false _G.w_err = nil
fiber.create(function()
  local s = box.space.cr
  local i = 0
  while _G.w_on do
    if _G.w_fmt and not _G.w_fmted then
      s:format({{'id', 'unsigned'}, {'name', 'string'}, {'n', 'integer'}, {'note', 'string', is_nullable = true}})
      _G.w_fmted = true
    end
    i = i + 1
    local ok, err = pcall(function()
      box.begin()
      for k = 1, 1 + i % 4 do
        local id = (i * 37 + k * 101) % 9000
        local kind = (i + k) % 6
        if kind == 0 then
          if s:get(id) == nil then s:insert{id, 'r' .. id, k} end
        elseif kind == 1 then
          if _G.w_fmted then s:replace{id, 'r' .. id, i, 'note ' .. i} else s:replace{id, 'r' .. id, i} end
        elseif kind == 2 then
          if _G.w_fmted then s:update(id, {{'+', 3, 1}, {'=', 4, 'u' .. i}}) else s:update(id, {{'+', 3, 1}}) end
        elseif kind == 3 then
          s:upsert({id, 'r' .. id, 1}, {{'-', 'n', 2}})
        elseif kind == 4 then
          s:delete(id)
        else
          s.index.by_name:delete('r' .. id)
        end
      end
      box.commit()
    end)
    if not ok then box.rollback() _G.w_err = tostring(err) break end
    _G.w_n = i
    fiber.sleep(0.05)
  end
  _G.w_done = true
end)
"""


def _written(server: LiveTarantool, more: int) -> None:
    """Until the writer committed ``more`` transactions more (an amount, not a time)."""
    target = int(server.value("_G.w_n")) + more
    ok = until(lambda: int(server.value("_G.w_n")) >= target or server.value("_G.w_done") == "true", interval=0.1)
    assert server.value("_G.w_err == nil") == "true", server.value("_G.w_err")
    assert ok, "the writer went on"


def _flag(server: LiveTarantool, name: str) -> None:
    assert until(lambda: server.value(f"_G.{name}") == "true", interval=0.1), f"the writer set {name}"


def _server_rows(server: LiveTarantool) -> dict[int, dict[str, Any]]:
    tuples = server.json(f"box.space.{SPACE}:select()")
    return {t[0]: {n: (t[k] if k < len(t) else None) for k, n in enumerate(NAMES)} for t in tuples}


def _delta_rows(path: Path) -> dict[int, dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    out = {}
    for row in rows:
        plain = plain_row(row)
        assert plain.get("extra_fields") in (None, []), plain  # the format names every field the writer sets
        out[row["id"]] = {n: plain.get(n) for n in NAMES}
    assert len(out) == len(rows), "one row per key in the target"
    return out


def _beyond(batch: int, *, change: bool = False, column: str | None = None) -> Any:
    """A check: a batch after ``batch`` with rows (holding a change, not only snapshot tuples; holding ``column``)
    was merged."""
    return lambda batches: any(
        b > batch and info["rows"] and (not change or set(info["ops"]) - {"SNAPSHOT"})
        and (column is None or column in info["columns"]) for b, info in batches.items())


def test_killed_mid_snapshot_and_mid_stream_while_writing_and_changing_the_format(crash_tarantool: LiveTarantool,
                                                                                 tmp_path: Path) -> None:
    server = crash_tarantool
    server.eval(f"box.schema.space.create('{SPACE}', {{format = {{{{'id', 'unsigned'}}, {{'name', 'string'}}, "
                f"{{'n', 'integer'}}}}}}) box.space.{SPACE}:create_index('pk') "
                f"box.space.{SPACE}:create_index('by_name', {{parts = {{'name'}}, unique = true}})")
    # enough tuples for the snapshot to hold the space in several blocks, read in several micro-batches
    server.eval(f"for i = 1000, {999 + BULK} do box.space.{SPACE}:insert{{i, 'bulk ' .. i .. string.rep('.', 60), i}} "
                "end")
    server.eval("box.snapshot()")
    options = {"view": "space", "space": SPACE, "startingPosition": "snapshot", "mode": "FAILFAST",
               "maxBytesPerTrigger": "10000"}
    job = Job(tmp_path, {"kind": "tarantool", "format": "tarantool-xlog", "path": str(server.directory),
                         "space": SPACE, "options": options, "target": str(tmp_path / "delta")})
    server.eval(WRITER)
    try:
        _written(server, 20)
        job.start()
        job.wait_batches(lambda b: 0 in b and "SNAPSHOT" in b[0]["ops"], "the first snapshot batch")
        job.kill()  # 1: mid-snapshot
        first_kill = max(job.batches())
        _written(server, 20)

        job.start()
        job.wait_batches(_beyond(first_kill, change=True), "a batch of changes after the snapshot")
        job.kill()  # 2: mid-stream
        second_kill = max(job.batches())
        _written(server, 20)

        job.start()
        job.wait_batches(_beyond(second_kill), "a batch after the restart")
        server.eval("_G.w_fmt = true")  # the running query's schema cannot name the new field
        _flag(server, "w_fmted")
        assert job.wait_exit() == STOPPED, job.log_tail()
        assert "schema change" in job.error() and "'note'" in job.error(), job.error()
        stopped_at = max(job.batches())
        _written(server, 10)

        job.start()  # the retry: the schema now has the field
        job.wait_batches(_beyond(stopped_at, column="note"), "a batch with the new field")
        job.kill()  # 3: mid-stream, after the format change
        _written(server, 20)
    finally:
        server.eval("_G.w_on = false")
        job.close()
    _flag(server, "w_done")
    assert server.value("_G.w_err == nil") == "true", server.value("_G.w_err")

    job.start("availableNow", {"maxBytesPerTrigger": "1m"})  # catch up with everything written, in larger batches
    assert job.wait_exit(STATE_TIMEOUT * 2) == 0, job.log_tail()
    attempts = job.attempts()
    pids = list(dict.fromkeys(a["pid"] for a in attempts))
    # the snapshot was still being read when the first job was killed: a later one read more of it
    assert any("SNAPSHOT" in a["ops"] for a in attempts if a["pid"] != pids[0])
    batches = job.batches()
    assert sorted(batches) == list(range(len(batches))), "batch ids without a gap"

    got, want = _delta_rows(job.target), _server_rows(server)
    assert len(want) > BULK // 2 and any(r["note"] for r in want.values())
    missing = sorted(want.keys() - got.keys())
    extra = sorted(got.keys() - want.keys())
    assert not missing and not extra, f"{len(missing)} keys missing (first {missing[:5]}), {len(extra)} extra"
    for key, row in want.items():
        assert got[key] == row, key
