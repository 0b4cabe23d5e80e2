-- Workload "types": every MessagePack type Tarantool 2.6 stores in a tuple, at its width boundaries.
-- Run by tests/servers/tarantool.py after box.cfg{}.
local ffi = require('ffi')
local decimal = require('decimal')
local uuid = require('uuid')

local s = box.schema.space.create('types')
s:create_index('pk')

-- Integers at every MessagePack width boundary (fixint, uint8..uint64, negative fixint, int8..int64).
local ints = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296,
    9007199254740991, 9007199254740992ULL, 9223372036854775807LL, 9223372036854775808ULL,
    18446744073709551615ULL, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649LL,
    -9007199254740992LL, -9223372036854775807LL, -9223372036854775808LL}
for i, v in ipairs(ints) do
    s:insert{100 + i, v}
end
s:insert{200, ints}

-- Floats and doubles: Lua numbers that are not integral are doubles; ffi.cast forces MP_FLOAT / MP_DOUBLE.
s:insert{300, 0.5, -2.25, 1e308, -1e308, 4.9e-324, 2.2250738585072014e-308, 1 / 3}
s:insert{301, ffi.cast('float', 1.5), ffi.cast('float', -0.1), ffi.cast('float', 3.4e38), ffi.cast('float', 1e-45)}
s:insert{302, ffi.cast('double', -0.0), ffi.cast('double', 0.0), ffi.cast('double', 2), ffi.cast('float', -0.0)}
s:insert{303, ffi.cast('double', 0 / 0), ffi.cast('double', math.huge), ffi.cast('double', -math.huge),
    ffi.cast('float', math.huge)}

-- Booleans, nil: box.NULL in the middle and at the end; a Lua nil hole becomes MP_NIL too.
s:insert{400, true, false, box.NULL, 'after null', box.NULL}
s:insert{401, {1, box.NULL, 3}, {box.NULL}, {}}

-- Strings: empty, unicode, every byte value, long (fixstr, str8, str16, str32 headers).
local all_bytes = {}
for b = 0, 255 do all_bytes[#all_bytes + 1] = string.char(b) end
s:insert{500, '', 'a', string.rep('x', 31), string.rep('y', 32), string.rep('z', 255), string.rep('w', 256)}
s:insert{501, 'Привет, 世界 🚀', table.concat(all_bytes)}
s:insert{502, string.rep('0123456789abcdef', 4096 * 2)}  -- 128 KiB: str32 and a large zstd block

-- Maps: string keys, integer keys (forced map and sparse), negative and mixed keys, nested containers.
s:insert{600, {a = 1, b = 'two', c = {d = {e = {f = true}}}}}
s:insert{601, setmetatable({[1] = 'a', [2] = 'b'}, {__serialize = 'map'}), {[10] = 'ten', [1000] = 'thousand'}}
s:insert{602, {[-5] = 'minus five', [0] = 'zero', x = {1, {y = {2, 3}}}}}
s:insert{603, setmetatable({}, {__serialize = 'map'}), setmetatable({}, {__serialize = 'seq'})}
s:insert{604, {{{{{{'deep'}}}}}}, {list = {{k = 1}, {k = 2}}}}

-- Tarantool MP_EXT values: decimal (type 1) and uuid (type 2).
s:insert{700, decimal.new('-123.456e-5'), decimal.new('0'), decimal.new('1'), decimal.new('-1'),
    decimal.new('12345678901234567890123456789012345678'), decimal.new('0.00000000000000000000000000000000000001'),
    decimal.new('-99999999999999999999999999999999999999'), decimal.new('1.5e10'), decimal.new('123.4500')}
s:insert{701, uuid.fromstr('f6423bdf-b49e-4913-b361-0740c9702e4b'), uuid.fromstr('00000000-0000-0000-0000-000000000000'), uuid.new()}
s:insert{702, {d = decimal.new('3.14'), u = uuid.fromstr('11111111-2222-3333-4444-555555555555')},
    {decimal.new('-0.5')}}

-- Varbinary: Lua strings always encode as MP_STR in 2.6, so build the tuple MessagePack by hand and store it
-- with the module C API box_replace(); the space format declares the field 'varbinary', so Tarantool itself
-- rejects anything but MP_BIN there.
ffi.cdef[[int box_replace(uint32_t space_id, const char *tuple, const char *tuple_end, void **result);]]
local bin = box.schema.space.create('types_bin', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'payload', type = 'varbinary'}, {name = 'label', type = 'string'},
}})
bin:create_index('pk')
local msgpack = require('msgpack')
local function bin_header(n)
    if n < 256 then return '\xc4' .. string.char(n) end
    if n < 65536 then return '\xc5' .. string.char(math.floor(n / 256), n % 256) end
    return '\xc6' .. string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
        math.floor(n / 256) % 256, n % 256)
end
local function put_bin(id, payload, label)
    local data = '\x93' .. msgpack.encode(id) .. bin_header(#payload) .. payload .. msgpack.encode(label)
    local rc = ffi.C.box_replace(bin.id, data, ffi.cast('const char *', data) + #data, nil)
    assert(rc == 0, 'box_replace failed: ' .. tostring(box.error.last()))
end
put_bin(1, '', 'empty')
put_bin(2, 'a\0b\255', 'bytes')
put_bin(3, table.concat(all_bytes), 'all bytes, bin16')
put_bin(4, string.rep('\1\2\3\4', 20000), 'bin32')

-- Scalar/any field holding every kind side by side, then updates that change types.
s:insert{800, 1, -1, 1.25, 'str', true, box.NULL, {1}, {k = 'v'}, decimal.new('2.5'), uuid.fromstr(
    '00000000-0000-0000-0000-000000000001')}
s:update(800, {{'=', 2, decimal.new('7.25')}, {'=', 3, ffi.cast('float', 0.25)}, {'=', 4, 18446744073709551615ULL}})
s:update(800, {{'+', 3, 1}, {'-', 2, decimal.new('0.25')}})
s:upsert({801, decimal.new('1')}, {{'+', 2, decimal.new('1.1')}})
s:upsert({801, decimal.new('1')}, {{'+', 2, decimal.new('1.1')}})
s:delete{800}

box.snapshot()
