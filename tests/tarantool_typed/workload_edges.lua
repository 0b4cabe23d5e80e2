-- Workload for the typed columns at the edges of their types: space 'edges' with one nullable field per typed
-- column type and one row per edge value (each row sets one field, so a value that does not fit its column
-- concerns exactly that row), a snapshot, then UPDATE arithmetic on decimals at 38 digits and on doubles mixed
-- with decimals (replayed by view=state), a few more edge rows after the snapshot, and the final content:
-- edges.mp (box.space.edges:select() as MessagePack), edges.format.mp, edges.lsn.
-- Run by tests/tarantool_typed/test_edges.py after box.cfg{} (wal_dir and memtx_dir in a temp dir).
local decimal = require('decimal')
local msgpack = require('msgpack')
local fio = require('fio')
local ffi = require('ffi')

local function write(name, data)
    local f = assert(fio.open(name, {'O_WRONLY', 'O_CREAT', 'O_TRUNC'}, tonumber('644', 8)))
    f:write(data)
    f:close()
end

local edges = box.schema.space.create('edges', {format = {
    {name = 'id', type = 'unsigned'},
    {name = 'dec', type = 'decimal', is_nullable = true},
    {name = 'num', type = 'number', is_nullable = true},
    {name = 'dbl', type = 'double', is_nullable = true},
    {name = 'int', type = 'integer', is_nullable = true},
    {name = 'uns', type = 'unsigned', is_nullable = true},
    {name = 'sc', type = 'scalar', is_nullable = true},
}})
edges:create_index('pk')

local FIELD = {dec = 2, num = 3, dbl = 4, int = 5, uns = 6, sc = 7}
local next_id = 0

-- one row per value: {id, nil..., value at the field's place}
local function put(field, value)
    next_id = next_id + 1
    local t = {next_id}
    for i = 2, FIELD[field] - 1 do t[i] = box.NULL end
    t[FIELD[field]] = value
    edges:insert(t)
end

-- a double as MP_DOUBLE whatever its value (Lua numbers with an integral value are sent as integers)
local function D(x) return ffi.cast('double', x) end

local decimals = {
    -- 38 digits, 20 of them integer digits; 12 integer digits; 20-digit integers; negative scales (stored with
    -- a negative exponent); the smallest step of the column; zeros with a sign and a scale; trailing zeros
    -- beyond scale 18
    '123456789012.3456', '-123456789012.3456', '99999999999999999999.999999999999999999',
    '-99999999999999999999.999999999999999999', '12345678901234567890', '-12345678901234567890.123456789012345678',
    '1234567890123456789.1', '1e5', '9.99e19', '-1.5e10', '0.000000000000000001', '-0.000000000000000001', '0',
    '-0', '-0.000', '0.1000000000000000000000', '1.000000000000000000000000000000000000',
    -- values that do not fit decimal(38,18): 21 integer digits, a 38-digit integer, more than 18 fraction digits
    '100000000000000000000', '-100000000000000000000', '1e20', '9.99e37', '12345678901234567890123456789012345678',
    '0.0000000000000000001', '0.1234567890123456789', '1e-38',
}
for _, text in ipairs(decimals) do put('dec', decimal.new(text)) end

-- number: integers around 2^53 and 2^63, 2^64 - 1, doubles at the edges, a decimal
for _, v in ipairs({9007199254740992ULL, 9007199254740993ULL, 9007199254740994ULL, -9007199254740993LL,
                    -9223372036854775807LL - 1, 9223372036854775808ULL, 18446744073709551615ULL, 0}) do
    put('num', v)
end
for _, v in ipairs({0 / 0, 1 / 0, -1 / 0, -0.0, 0.1, 5e-324, 1.7976931348623157e308}) do put('num', D(v)) end
put('num', decimal.new('1.5'))

-- double: only MP_DOUBLE values are accepted by the field
for _, v in ipairs({0 / 0, 1 / 0, -1 / 0, -0.0, 5e-324, -1.7976931348623157e308, 2 ^ 53 + 2}) do put('dbl', D(v)) end

-- integer and unsigned: the signed 64-bit range and beyond it
for _, v in ipairs({9223372036854775807LL, -9223372036854775807LL - 1, 9223372036854775808ULL,
                    18446744073709551615ULL}) do
    put('int', v)
end
for _, v in ipairs({0, 9223372036854775807ULL, 9223372036854775808ULL, 18446744073709551615ULL}) do put('uns', v) end

-- scalar (a variant column): decimals Tarantool can hold that decimal(38,18) cannot
for _, text in ipairs({'9.99e37', '12345678901234567890123456789012345678', '1e-38', '-0', '123456789012.3456'}) do
    put('sc', decimal.new(text))
end
put('sc', 18446744073709551615ULL)

box.snapshot()

-- arithmetic replayed by view=state: Tarantool computes decimals with 38 digits, rounding half up, and takes a
-- double into a decimal with 15 significant digits
local function row(id, field, value)
    local t = {id}
    for i = 2, FIELD[field] - 1 do t[i] = box.NULL end
    t[FIELD[field]] = value
    edges:insert(t)
end
row(501, 'dec', decimal.new('12345678901234567890.123456789012345678'))
edges:update(501, {{'+', FIELD.dec, decimal.new('0.000000000000000001')}})
row(502, 'sc', decimal.new('99999999999999999999999999999999999998'))
edges:update(502, {{'+', FIELD.sc, decimal.new('0.5')}})
row(503, 'dec', decimal.new('1'))
edges:update(503, {{'+', FIELD.dec, 1 / 3}})
row(504, 'dec', decimal.new('1.5'))
edges:update(504, {{'+', FIELD.dec, 0.1 + 0.2}})
row(505, 'sc', decimal.new('1'))
edges:update(505, {{'-', FIELD.sc, 2 ^ -40}})
row(506, 'num', 9007199254740992ULL)
edges:update(506, {{'+', FIELD.num, 1}})
row(507, 'dec', decimal.new('99999999999999999999.999999999999999999'))
edges:update(507, {{'+', FIELD.dec, decimal.new('0.000000000000000001')}})
row(508, 'uns', 9223372036854775807ULL)
edges:update(508, {{'+', FIELD.uns, 1}})
row(509, 'dec', decimal.new('1e5'))
edges:update(509, {{'+', FIELD.dec, decimal.new('1e5')}})
row(510, 'sc', decimal.new('-12345678901234567890.12345678901234567'))
edges:update(510, {{'-', FIELD.sc, decimal.new('0.000000000000000005')}})
row(511, 'dec', decimal.new('123456789012.3456'))
edges:update(511, {{'+', FIELD.dec, 2}})
-- below the smallest exponent Tarantool keeps (1e-38): rounded half up to it
row(512, 'sc', decimal.new('0'))
edges:update(512, {{'+', FIELD.sc, 1.5e-38}})
row(513, 'sc', decimal.new('1e-38'))
edges:update(513, {{'-', FIELD.sc, 2.5e-38}})
row(514, 'sc', decimal.new('0.5'))
edges:update(514, {{'+', FIELD.sc, 18446744073709551615ULL}})
-- UPSERT skips an operation Tarantool cannot apply (logged, the tuple unchanged): a decimal overflow, a double
-- that has no decimal
row(515, 'sc', decimal.new('99999999999999999999999999999999999999'))
edges:upsert({515}, {{'+', FIELD.sc, 1}})
row(516, 'dec', decimal.new('1.5'))
edges:upsert({516}, {{'+', FIELD.dec, 1e300}, {'-', FIELD.dec, 0.5}})
row(517, 'dec', decimal.new('2.5'))
edges:upsert({517}, {{'+', FIELD.dec, 0 / 0}, {'+', FIELD.dec, 1e-300}})

-- edge rows after the snapshot too (view=state takes them from the xlog)
next_id = 600
put('dec', decimal.new('-99999999999999999999.999999999999999999'))
put('dec', decimal.new('99999999999999999999.9999999999999999999'))

write('edges.mp', msgpack.encode(edges:select()))
write('edges.format.mp', msgpack.encode(edges:format()))
write('edges.lsn', tostring(box.info.lsn))
