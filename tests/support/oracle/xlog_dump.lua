-- Dump every row of a Tarantool xlog/snap/vylog file as seen by Tarantool's own reader, losslessly.
--
-- Usage: tarantool xlog_dump.lua INPUT_FILE OUTPUT_FILE
--
-- Iterates require('xlog').pairs(INPUT_FILE) (src/box/lua/xlog.c) and writes one JSON object per row:
--   {"h": {NAME: VALUE, ...}, "b": {NAME: VALUE, ...} | null}
-- where NAME is the key as xlog.pairs() names it (a number for keys it has no name for) and every VALUE is
-- written in a typed form that keeps what a Lua value knows (see encode() below). Body fields that xlog.pairs()
-- returns as box tuples (key, tuple, operations, ...) are written as the tuple's raw MessagePack bytes
-- (msgpack.encode() of a box tuple copies the tuple's stored data unchanged), so bin vs str, float vs double,
-- -0.0, NaN and int widths survive; next to it, "lua" holds the same value as Tarantool decodes it to Lua
-- (tuple:totable()), so Python can check its own decoding of the raw bytes (decimal, uuid) against Tarantool's. The last line is {"end": ROW_COUNT} so a cut-short dump is detectable.
local xlog = require('xlog')
local msgpack = require('msgpack')
local digest = require('digest')
local ffi = require('ffi')

local function b64(s)
    return digest.base64_encode(s, {nowrap = true})
end

local function number_text(x)
    -- %.17g round-trips every double; Python's float() parses nan/inf/-inf and "-0".
    if x ~= x then return 'nan' end
    if x == math.huge then return 'inf' end
    if x == -math.huge then return '-inf' end
    if x == 0 and 1 / x < 0 then return '-0' end
    return string.format('%.17g', x)
end

local encode

local function encode_seq(t)
    local parts = {}
    for i = 1, #t do parts[#parts + 1] = encode(t[i]) end
    return '{"a":[' .. table.concat(parts, ',') .. ']}'
end

local function encode_table(t)
    local mt = getmetatable(t)
    local hint = mt and mt.__serialize
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    local is_seq = hint == 'seq' or hint == 'sequence' or hint == 'array'
    if hint == nil and n > 0 and n == #t then
        is_seq = true
    end
    if is_seq then
        return encode_seq(t)
    end
    local parts = {}
    for k, v in pairs(t) do
        parts[#parts + 1] = '[' .. encode(k) .. ',' .. encode(v) .. ']'
    end
    return '{"m":[' .. table.concat(parts, ',') .. ']}'
end

encode = function(v)
    local lt = type(v)
    if v == nil then
        return 'null'
    elseif lt == 'boolean' then
        return v and 'true' or 'false'
    elseif lt == 'number' then
        return '{"n":"' .. number_text(v) .. '"}'
    elseif lt == 'string' then
        return '{"s":"' .. b64(v) .. '"}'
    elseif lt == 'table' then
        return encode_table(v)
    elseif lt == 'cdata' then
        if box.tuple.is(v) then
            return '{"raw":"' .. b64(msgpack.encode(v)) .. '","lua":' .. encode_seq(v:totable()) .. '}'
        end
        if v == nil then  -- box.NULL / msgpack.NULL
            return '{"nil":1}'
        end
        local ct = tostring(ffi.typeof(v))
        if ct == 'ctype<int64_t>' or ct == 'ctype<uint64_t>' then
            return '{"i":"' .. tostring(v):gsub('U?LL$', '') .. '"}'
        elseif ct == 'ctype<float>' or ct == 'ctype<double>' then
            return '{"n":"' .. number_text(tonumber(v)) .. '"}'
        elseif ct == 'ctype<struct tt_uuid>' then
            return '{"uuid":"' .. tostring(v) .. '"}'
        elseif require('decimal').is_decimal(v) then
            return '{"dec":"' .. tostring(v) .. '"}'
        end
        return '{"other":"' .. b64(ct .. ' ' .. tostring(v)) .. '"}'
    end
    return '{"other":"' .. b64(lt .. ' ' .. tostring(v)) .. '"}'
end

local function encode_section(t)
    if t == nil then return 'null' end
    local parts = {}
    for k, v in pairs(t) do
        parts[#parts + 1] = '"' .. tostring(k) .. '":' .. encode(v)
    end
    return '{' .. table.concat(parts, ',') .. '}'
end

local input, output = arg[1], arg[2]
local out = assert(io.open(output, 'w'))
local count = 0
local ok, err = pcall(function()
    for _, row in xlog.pairs(input) do
        out:write('{"h":', encode_section(row.HEADER), ',"b":', encode_section(row.BODY), '}\n')
        count = count + 1
    end
end)
if not ok then
    out:write('{"error":"', b64(tostring(err)), '","rows":', count, '}\n')
else
    out:write('{"end":', count, '}\n')
end
out:close()
os.exit(0)
