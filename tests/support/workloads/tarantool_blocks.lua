-- Workload "blocks": many tiny single-statement transactions (each its own plain, uncompressed block) next to
-- big ones (zstd blocks: Tarantool compresses a block of >= 2 KiB), with wal_mode = 'fsync' set by the harness.
-- Run by tests/servers/tarantool.py after box.cfg{}.
local fiber = require('fiber')
local s = box.schema.space.create('blocks')
s:create_index('pk')
for i = 1, 300 do
    s:insert{i, i % 2 == 0}
end
box.begin()
for i = 301, 400 do
    s:insert{i, string.rep('compressible ', 20)}
end
box.commit()
-- Concurrent fibers: their transactions are written together, several transactions in one block.
local done = fiber.channel(20)
for f = 1, 20 do
    fiber.create(function()
        for i = 1, 10 do
            s:replace{10000 + f * 100 + i, f, i}
        end
        done:put(true)
    end)
end
for _ = 1, 20 do done:get() end
s:insert{500, string.rep('x', 1500)}
s:insert{501, string.rep('y', 3000)}
