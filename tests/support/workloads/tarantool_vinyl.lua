-- Workload "vinyl": a vinyl space (the xlog rows look like memtx ones; the engine also writes a .vylog and
-- .run/.index files on dump), with upserts, deletes, a secondary index and snapshots (which dump vinyl).
-- Run by tests/servers/tarantool.py after box.cfg{}.
local v = box.schema.space.create('vin', {engine = 'vinyl'})
v:create_index('pk')
v:create_index('sk', {parts = {{2, 'string'}}, unique = false})
for i = 1, 200 do
    v:replace{i, 'v' .. (i % 7), i * 1.5}
end
for i = 1, 50 do
    v:upsert({i, 'up', 0}, {{'+', 3, 1}})
end
v:delete{3}
v:update(4, {{'=', 2, 'updated'}})
box.snapshot()
for i = 201, 260 do
    v:insert{i, 'second run', -i}
end
v:delete{201}
box.snapshot()
v:upsert({1000, 'new', 1}, {{'+', 3, 1}})
