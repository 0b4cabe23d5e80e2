-- Workload for the typed views (view=space, view=state): formatted spaces with every 2.6 field type, every
-- update operation (by number, negative number, name and JSON path), UPSERT, REPLACE, DELETE (also through a
-- secondary index), a format change, truncate, a snapshot in the middle, and three captures of the spaces'
-- content (box.space.X:select() as MessagePack) with the LSN they were taken at: <tag>_<space>.mp, <tag>.lsn,
-- and the format in force: <tag>_<space>.format.mp.
-- Run by tests/tarantool_typed/conftest.py after box.cfg{} (wal_dir and memtx_dir in a temp dir).
local decimal = require('decimal')
local uuid = require('uuid')
local msgpack = require('msgpack')
local fio = require('fio')
local ffi = require('ffi')

local function write(name, data)
    local f = assert(fio.open(name, {'O_WRONLY', 'O_CREAT', 'O_TRUNC'}, tonumber('644', 8)))
    f:write(data)
    f:close()
end

local function capture(tag)
    for _, name in ipairs({'users', 'kv'}) do
        write(tag .. '_' .. name .. '.mp', msgpack.encode(box.space[name]:select()))
        write(tag .. '_' .. name .. '.format.mp', msgpack.encode(box.space[name]:format()))
    end
    write(tag .. '.lsn', tostring(box.info.lsn))
end

local users = box.schema.space.create('users', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
    {name = 'age', type = 'integer', is_nullable = true}, {name = 'score', type = 'number'},
    {name = 'ratio', type = 'double'}, {name = 'active', type = 'boolean'},
    {name = 'balance', type = 'decimal'}, {name = 'uid', type = 'uuid'}, {name = 'flags', type = 'unsigned'},
    {name = 'tags', type = 'array'}, {name = 'attrs', type = 'map'}, {name = 'note', type = 'any'},
    {name = 'blob', type = 'varbinary', is_nullable = true},
}})
users:create_index('pk')
users:create_index('by_name', {parts = {{field = 2, type = 'string'}}, unique = true})

local function M() return setmetatable({}, {__serialize = 'map'}) end

local function u(id)
    return uuid.fromstr(string.format('00000000-0000-0000-0000-%012d', id))
end

users:insert{1, 'ann', 31, 10, 0.5, true, decimal.new('10.25'), u(1), 0xF0, {'a', 'b'}, {k = 'v'}, 'n1'}
users:insert{2, 'bob', box.NULL, 2.5, 1.25, false, decimal.new('-3.5'), u(2), 7, {}, {x = {y = 1}}, 42, box.NULL,
    'extra one', 99}
users:insert{3, 'cid', -4, -7, -0.75, true, decimal.new('0'), u(3), 0, {1, {2, 3}}, M(), {nested = true}}
users:replace{4, 'dan', 50, 1e10, 3.5, false, decimal.new('123456789.123456789'), u(4), 1, {'z'}, {a = 1}, box.NULL}

-- a varbinary value: Lua strings are MP_STR in 2.6, so the tuple is encoded by hand and stored with box_replace()
ffi.cdef[[int box_replace(uint32_t space_id, const char *tuple, const char *tuple_end, void **result);]]
do
    local head = {5, 'eve', 22, 1, 0.125, true, decimal.new('1.5'), u(5), 3, {}, M(), 'bin'}
    local data = '\x9d'
    for _, v in ipairs(head) do data = data .. msgpack.encode(v) end
    data = data .. '\xc4\x04a\0b\255'
    local rc = ffi.C.box_replace(users.id, data, ffi.cast('const char *', data) + #data, nil)
    assert(rc == 0, 'box_replace failed: ' .. tostring(box.error.last()))
end

-- every update operation
users:update(1, {{'+', 3, 1}, {'-', 'score', 2.5}, {'+', 'balance', decimal.new('0.75')}})
users:update(1, {{'&', 'flags', 0x3C}})
users:update(1, {{'|', 9, 0x01}})
users:update(1, {{'^', -4, 0xFF}})
users:update(1, {{':', 2, 2, 1, 'NNN'}, {':', 'note', -1, 0, '!'}})
users:update(1, {{'!', 'tags[1]', 'first'}})
users:update(1, {{'=', 10, {'p', 'q', 'r'}}})
users:update(1, {{'!', '[10][2]', 'ins'}})
users:update(1, {{'#', '[10][1]', 1}})
users:update(1, {{'=', 'attrs.k', 'w'}})
users:update(1, {{'=', 'attrs.new', 5}})
users:update(2, {{'=', 'age', 40}, {'!', 14, 'inserted extra'}, {'=', '[11].x.y', 2}})
users:update(2, {{'#', -1, 1}})
users:update(3, {{'+', '[10][2][1]', 10}, {'-', 4, 0.5}, {'=', 6, false}, {':', 'name', -2, 1, 'DD'}})
users.index.by_name:update('dan', {{'=', 'note', 'via sk'}, {'+', 'age', -1}})
users:upsert({6, 'fay', 1, 1, 0.25, true, decimal.new('1'), u(6), 1, {}, M(), box.NULL}, {{'+', 3, 1}})
users:upsert({6, 'fay?', 1, 1, 0.25, true, decimal.new('1'), u(6), 1, {}, M(), box.NULL},
    {{'+', 3, 10}, {'=', 2, 'fay!'}, {'+', 'note', 1}, {'=', 'attrs', {u = 'upserted'}}})
users:delete(3)
box.space.users.index.by_name:delete('eve')

local kv = box.schema.space.create('kv', {format = {{name = 'ns', type = 'string'}, {name = 'k', type = 'unsigned'},
    {name = 'v', type = 'scalar', is_nullable = true}}})
kv:create_index('pk', {parts = {{field = 1, type = 'string'}, {field = 2, type = 'unsigned'}}})
for i = 1, 40 do kv:insert{'ns' .. (i % 3), i, i * 1.5} end
for i = 1, 40, 4 do kv:upsert({'ns' .. (i % 3), i, 0}, {{'+', 3, 100}}) end
for i = 2, 40, 5 do kv:delete{'ns' .. (i % 3), i} end

capture('a')

box.snapshot()

-- a format change: a new nullable field after the last one, and a field type widened
users:format({
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
    {name = 'age', type = 'integer', is_nullable = true}, {name = 'score', type = 'number'},
    {name = 'ratio', type = 'double'}, {name = 'active', type = 'boolean'},
    {name = 'balance', type = 'decimal'}, {name = 'uid', type = 'uuid'}, {name = 'flags', type = 'unsigned'},
    {name = 'tags', type = 'array'}, {name = 'attrs', type = 'map'}, {name = 'note', type = 'any'},
    {name = 'blob', type = 'varbinary', is_nullable = true}, {name = 'email', type = 'string', is_nullable = true},
})
users:insert{7, 'gus', 70, 7, 7.5, true, decimal.new('7.77'), u(7), 7, {7}, {g = 7}, 'n7', box.NULL, 'gus@x'}
users:update(1, {{'!', 13, box.NULL}})
users:update(1, {{'=', 14, 'ann@x'}})
users:update(2, {{'=', 'email', 'bob@x'}})
kv:truncate()
kv:insert{'after', 1, 'truncate'}
kv:replace{'after', 2, true}

capture('b')

users:update(7, {{'=', 'name', 'gus2'}, {'+', 'ratio', 0.25}, {'!', -1, 'tail'}})
users:upsert({1, 'x', 0, 0, 0.5, true, decimal.new('0'), u(1), 0, {}, M(), 0}, {{'+', 'age', 100}, {'=', 1, 99}})
users:replace{8, 'hal', box.NULL, 8, 8.5, false, decimal.new('-0.001'), u(8), 8, {}, M(), {1, 2}}
users:delete(5)

capture('c')
