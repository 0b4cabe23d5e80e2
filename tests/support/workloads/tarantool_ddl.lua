-- Workload "ddl": schema changes as they appear in the log (rows in _space 280, _index 288, _sequence 284,
-- _truncate 330, _user/_priv ...): create, alter format, rename, truncate, drop, index create/alter/drop,
-- sequence create/alter/drop, users and grants. Run by tests/servers/tarantool.py after box.cfg{}.
local s = box.schema.space.create('ddl_a', {engine = 'memtx', field_count = 0})
s:create_index('pk', {type = 'tree', parts = {{1, 'unsigned'}}})
s:format({{name = 'id', type = 'unsigned'}, {name = 'v', type = 'string'}})
s:insert{1, 'x'}
s:create_index('sk', {type = 'hash', parts = {{2, 'string'}}})
s.index.sk:alter({type = 'tree', unique = false})
s.index.sk:rename('sk2')
s:rename('ddl_a_renamed')
s:truncate()
s:insert{2, 'after truncate'}
s.index.sk2:drop()
s:format({{name = 'id', type = 'unsigned'}, {name = 'v', type = 'any'}, {name = 'w', type = 'map', is_nullable = true}})

local seq = box.schema.sequence.create('ddl_seq', {min = 1, max = 1000, cycle = true})
seq:next()
seq:alter({step = 10})
seq:next()
seq:drop()

local t = box.schema.space.create('ddl_b', {format = {{'k', 'string'}, {'n', 'number'}, {'d', 'decimal'},
    {'u', 'uuid'}, {'b', 'varbinary', is_nullable = true}, {'sc', 'scalar', is_nullable = true}}})
t:create_index('pk', {parts = {'k'}})
t:create_index('multi', {parts = {{'[2]', 'number'}}, unique = false})
t:drop()

box.schema.user.create('ddl_user', {password = 'secret'})
box.schema.user.grant('ddl_user', 'read,write', 'space', 'ddl_a_renamed')
box.schema.role.create('ddl_role')
box.schema.user.grant('ddl_user', 'execute', 'role', 'ddl_role')
box.schema.user.revoke('ddl_user', 'write', 'space', 'ddl_a_renamed')
box.schema.user.drop('ddl_user')
box.schema.func.create('ddl_func', {body = 'function() return 1 end', language = 'LUA'})
box.schema.func.drop('ddl_func')
s:drop()
box.snapshot()
