-- A writer for the streaming tests: keeps writing while queries tail the WAL directory.
-- Parameters come from the environment (see tests/support/tarantool_writer.py):
--   WRITER_TOTAL transactions, one every WRITER_PERIOD seconds; box.snapshot() every WRITER_SNAPSHOT_EVERY
--   transactions (0: never); then waits for WRITER_STOP_FILE (if set) before returning (the boot script exits,
--   which closes the active xlog with its EOF marker). With WRITER_SNAPSHOT_GATE (a directory), before its k-th
--   snapshot the writer creates waiting-k there and holds until go-k exists: a test lets the snapshot, and the
--   collection of old xlogs it triggers, happen once its reader is done with them.
-- Every DML type appears, in single-statement and multi-statement transactions, plus rows of a local space
-- (counted in vclock component 0).
local fio = require('fio')
local fiber = require('fiber')

local total = tonumber(os.getenv('WRITER_TOTAL') or '200')
local period = tonumber(os.getenv('WRITER_PERIOD') or '0.01')
local snap_every = tonumber(os.getenv('WRITER_SNAPSHOT_EVERY') or '0')
local stop_file = os.getenv('WRITER_STOP_FILE')
local gate = os.getenv('WRITER_SNAPSHOT_GATE')

local s = box.schema.space.create('stream_s', {if_not_exists = true})
s:create_index('pk', {if_not_exists = true})
local loc = box.schema.space.create('stream_local', {is_local = true, if_not_exists = true})
loc:create_index('pk', {if_not_exists = true})

local pad = string.rep('x', 300)
for i = 1, total do
    local kind = i % 5
    if kind == 0 then
        s:insert{i, 'single', pad}
    elseif kind == 1 then
        box.begin()
        s:insert{i, 'multi', pad}
        s:update(i, {{'=', 2, 'updated'}})
        s:replace{i, 'replaced', pad}
        s:upsert({i, 'upserted'}, {{'=', 2, 'upserted-again'}})
        box.commit()
    elseif kind == 2 then
        s:insert{i, 'to-delete'}
        s:delete(i)
    elseif kind == 3 then
        loc:replace{i % 7, 'local', i}
    else
        box.begin()
        for j = 1, 5 do
            s:replace{1000000 + i * 10 + j, pad}
        end
        box.commit()
    end
    if snap_every > 0 and i % snap_every == 0 then
        if gate ~= nil and gate ~= '' then
            local k = math.floor(i / snap_every)
            local f = fio.open(gate .. '/waiting-' .. k, {'O_CREAT', 'O_WRONLY'}, tonumber('644', 8))
            f:close()
            while not fio.path.exists(gate .. '/go-' .. k) do
                fiber.sleep(0.02)
            end
        end
        box.snapshot()
    end
    if period > 0 then
        fiber.sleep(period)
    end
end

if stop_file ~= nil and stop_file ~= '' then
    while not fio.path.exists(stop_file) do
        fiber.sleep(0.05)
    end
end
