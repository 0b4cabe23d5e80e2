"""Tarantool files the tests read: the real-server fixtures in ``tests/fixtures/tarantool`` and files the
session's Debian tarantool 2.6 writes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from spark_logsource.tarantool.xlog.blocks import Block, BlockScanner
from spark_logsource.tarantool.xlog.meta import read_meta

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tarantool"
#: Fixture files whose damage is the point (tested in tests/tarantool/test_bad_input.py).
DAMAGED = {"crc.bad.xlog", "eof.bad.xlog"}
UNSUPPORTED = {"format.bad.xlog": "unknown file type", "version.bad.xlog": "unsupported file format version"}

def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".xlog", ".snap", ".vylog"))


def readable_fixture_files() -> list[Path]:
    return [p for p in fixture_files() if p.name not in DAMAGED and p.name not in UNSUPPORTED]


B1_WORKLOAD_LUA = r"""
local decimal = require('decimal')
local uuid = require('uuid')
local fiber = require('fiber')
local s = box.schema.space.create('b1', {format = {{'id', 'unsigned'}}})
s:create_index('pk')
local loc = box.schema.space.create('b1_local', {is_local = true})
loc:create_index('pk')
for i = 1, 200 do s:insert{i, 'name' .. i, i * 2, {a = i, [5] = 'x'}} end
s:update(1, {{'=', 2, 'renamed'}, {'+', 3, 5}, {'#', 4, 1}})
s:upsert({2, 'u'}, {{'+', 3, 1}})
s:upsert({9999, 'new'}, {{'+', 3, 1}})
s:delete(3)
s:replace{4, decimal.new('-12.3450'), uuid.fromstr('0b5a1d34-2f6c-4b2e-9d3b-6a7c1e2f3a4b'),
          box.NULL, true, -7, 1.5, {nested = {1, 2, {k = 'v'}}}}
box.begin()
for i = 300, 340 do s:insert{i, string.rep('compressible ', 30)} end
loc:insert{1, 'local inside global txn'}
box.commit()
local done = fiber.channel(10)
for f = 1, 10 do
    fiber.create(function()
        for i = 1, 20 do s:replace{10000 + f * 100 + i, f, i} end
        done:put(true)
    end)
end
for _ = 1, 10 do done:get() end
box.snapshot()
for i = 400, 450 do s:insert{i, i} end
s:truncate()
"""

_B1_CACHE: dict[str, list[Path]] = {}


def b1_workload_files(base_factory: pytest.TempPathFactory) -> list[Path]:
    """.xlog and .snap files written by the real tarantool 2.6 for this module's tests (run once per session)."""
    if "files" not in _B1_CACHE:
        from tests.support.servers.tarantool import TarantoolError, run_script

        base = base_factory.mktemp("b1_tarantool")
        script = base / "b1_workload.lua"
        script.write_text(B1_WORKLOAD_LUA)
        try:
            result = run_script(script, base / "data")
        except TarantoolError as exc:
            pytest.fail(str(exc))
        _B1_CACHE["files"] = result.files
    return _B1_CACHE["files"]



def all_blocks() -> list[tuple[bytes, Block]]:
    out = []
    for path in readable_fixture_files():
        data = path.read_bytes()
        meta = read_meta(io.BytesIO(data), str(path))
        out += [(data, b) for b in BlockScanner(io.BytesIO(data), str(path), data_offset=meta.data_offset)]
    return out
