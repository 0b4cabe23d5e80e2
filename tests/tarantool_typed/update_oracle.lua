-- Apply update-operation cases with the real tarantool and record what it made of each one.
-- Reads cases.mp (an array of {tuple, ops}) from the working directory; for each case replaces the tuple into a
-- space without a format (primary key: field 1, unsigned), runs space:update(tuple[1], ops) under pcall and
-- records {true, new tuple} or {false, error message}; writes the array of results to results.mp. Then the same
-- operations as an UPSERT on the existing tuple (Tarantool skips the failing ones): {true, the tuple after it}
-- or {false, error message} (a refused request, never logged), in upserts.mp.
-- Run by tests/tarantool_typed/test_replay_vs_tarantool.py through tests/support/servers/tarantool.py.
local msgpack = require('msgpack')
local fio = require('fio')

local function read(name)
    local f = assert(fio.open(name, {'O_RDONLY'}))
    local data = f:read()
    f:close()
    return data
end

local cases = msgpack.decode(read('cases.mp'))
local s = box.schema.space.create('t')
s:create_index('pk', {parts = {{field = 1, type = 'unsigned'}}})
local results = {}
for i, case in ipairs(cases) do
    s:replace(case[1])
    local ok, res = pcall(s.update, s, case[1][1], case[2])
    if ok then
        results[i] = {true, res}
    else
        results[i] = {false, tostring(res)}
    end
end
local upserts = {}
for i, case in ipairs(cases) do
    s:replace(case[1])
    local ok, err = pcall(s.upsert, s, case[1], case[2])
    upserts[i] = ok and {true, s:get(case[1][1])} or {false, tostring(err)}
end

local function write(name, value)
    local f = assert(fio.open(name, {'O_WRONLY', 'O_CREAT', 'O_TRUNC'}, tonumber('644', 8)))
    f:write(msgpack.encode(value))
    f:close()
end
write('results.mp', results)
write('upserts.mp', upserts)
