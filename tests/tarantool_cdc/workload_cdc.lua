-- Workload for the CDC apply test: one space with every 2.6 scalar type plus map and array fields, changed by
-- multi-statement transactions (box.begin / box.commit) holding INSERT, REPLACE, UPDATE with every operator,
-- UPSERT on absent and present keys, DELETE (also through the secondary index) and a truncate; a local space
-- (vclock component 0) written in between; a snapshot in the middle (a second xlog). It writes:
--   cut<N>.lsn      box.info.lsn at the end of slice N (the test reads view=space in slices by LSN)
--   cut<N>.mp       box.space.cdc:select() at the end of slice N (MessagePack); format.mp its format
-- Run by tests/tarantool_cdc/conftest.py after box.cfg{} (wal_dir and memtx_dir in a temp dir).
local decimal = require('decimal')
local uuid = require('uuid')
local msgpack = require('msgpack')
local fio = require('fio')

local function write(name, data)
    local f = assert(fio.open(name, {'O_WRONLY', 'O_CREAT', 'O_TRUNC'}, tonumber('644', 8)))
    f:write(data)
    f:close()
end

local function cut(n)
    write('cut' .. n .. '.lsn', tostring(box.info.lsn))
    write('cut' .. n .. '.mp', msgpack.encode(box.space.cdc:select()))
end

local function M(t) return setmetatable(t or {}, {__serialize = 'map'}) end

local function u(id) return uuid.fromstr(string.format('00000000-0000-0000-0000-%012d', id)) end

local s = box.schema.space.create('cdc', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'code', type = 'string'}, {name = 'n', type = 'integer'},
    {name = 'x', type = 'number'}, {name = 'ok', type = 'boolean'}, {name = 'amount', type = 'decimal'},
    {name = 'uid', type = 'uuid'}, {name = 'bits', type = 'unsigned'}, {name = 'attrs', type = 'map'},
    {name = 'list', type = 'array'}, {name = 'note', type = 'string', is_nullable = true},
}})
s:create_index('pk')
s:create_index('by_code', {parts = {{field = 2, type = 'string'}}, unique = true})
local loc = box.schema.space.create('scratch', {is_local = true})
loc:create_index('pk')

local function row(id, code)
    return {id, code, id * 10, id + 0.5, id % 2 == 0, decimal.new(id .. '.25'), u(id), id * 3,
            M{k = 'v' .. id}, {id, 'a'}, 'note ' .. id}
end

-- slice 1: inserts and a first round of updates, in transactions
box.begin()
for id = 1, 8 do s:insert(row(id, 'c' .. id)) end
box.commit()
box.begin()
s:update(1, {{'+', 'n', 5}, {'-', 'x', 0.25}, {'+', 'amount', decimal.new('0.75')}})
s:update(2, {{'&', 'bits', 0x2}})
s:update(2, {{'|', 8, 0x13}})  -- overlaps the bit '&' kept: '|' and '^' differ
s:update(2, {{'^', -4, 0x1}})
s:update(3, {{':', 'code', 2, 0, 'XY'}, {':', 11, -1, 0, '!'}})
s:update(4, {{'=', 'attrs.k', 'w'}, {'!', 'list[1]', 'first'}})
s:update(4, {{'=', 'attrs.new', 5}, {'#', '[10][3]', 1}})
s:update(5, {{'=', 'ok', true}, {'=', 'uid', u(55)}, {'=', 'note', box.NULL}})
loc:replace{1, 'local one'}
s:replace{6, 'c6', -6, 1e10, false, decimal.new('-123456789.123456789'), u(6), 1, M{}, {}, 'replaced'}
box.commit()
box.begin()
s:upsert({9, 'c9', 9, 9, true, decimal.new('9'), u(9), 9, M{}, {}, 'upsert-new'}, {{'+', 'n', 1}})
s:upsert({1, 'zz', 0, 0, false, decimal.new('0'), u(0), 0, M{}, {}, 'ignored'}, {{'+', 'n', 100}, {'=', 'note', 'up'}})
s.index.by_code:update('c7', {{'=', 'note', 'via secondary'}, {'+', 'n', -1}})
s:delete(8)
box.commit()
cut(1)

-- slice 2: more changes, a snapshot (new xlog), a truncate and new rows after it
box.begin()
s:update(1, {{'!', 11, 'ins'}, {'#', 12, 1}})
s:update(2, {{'+', 'amount', decimal.new('1e-18')}, {'-', 'n', 100}})
s:upsert({2, 'c2', 0, 0, false, decimal.new('0'), u(0), 0, M{}, {}, box.NULL},
    {{'+', 'x', 1}, {'&', 'code', 1}, {'=', 'list', {1, {2, 3}}}})  -- the failing '&' is skipped by Tarantool
s.index.by_code:delete('c4')
loc:replace{2, 'local two'}
box.commit()
box.snapshot()
box.begin()
s:update(3, {{'=', 'attrs', M{nested = M{deep = {1, 2}}}}, {'+', 'x', 2}})
s:replace{10, 'c10', 10, -0.0, true, decimal.new('99999999999999999999.999999999999999999'), u(10), 0, M{}, {}}
box.commit()
cut(2)

-- slice 3: truncate, then a new life for the space
s:truncate()
box.begin()
for id = 20, 24 do s:insert(row(id, 'd' .. id)) end
s:update(20, {{'+', 'amount', decimal.new('0.5')}, {'+', 'x', 1.5}, {'=', 'list[2]', 'b'}})
s:upsert(row(21, 'ignored'), {{'+', 'bits', 4}, {':', 'note', 1, 4, 'NOTE'}})
s:upsert(row(25, 'd25'), {{'+', 'bits', 4}})
s:delete(22)
s.index.by_code:update('d23', {{'=', 'attrs.k', 'changed'}, {'!', 'attrs.added', true}})
s:replace{24, 'd24', -24, 24.75, false, decimal.new('0.000000000000000001'), u(24), 24, M{a = M{b = 1}},
    {M{c = 'd'}}, box.NULL}
box.commit()
loc:replace{3, 'local three'}
cut(3)

write('format.mp', msgpack.encode(s:format()))
