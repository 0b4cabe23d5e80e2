-- Workload "dml": every DML request type and every update operation on a memtx space, sequences, a local
-- space (group_id 1, lsn from vclock component 0) and a temporary space (never logged), with a snapshot in
-- the middle so the directory holds a .snap and the .xlog files before and after it.
-- Run by tests/servers/tarantool.py after box.cfg{} (wal_dir/memtx_dir/vinyl_dir in a temp dir).
local s = box.schema.space.create('dml', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
}})
s:create_index('pk')
s:create_index('by_name', {parts = {2, 'string'}, unique = false})

-- INSERT, REPLACE (new key and existing key), DELETE by primary and by secondary unique index.
s:insert{1, 'one', 10, 'abcdef', 0xF0, {a = {b = 1}}, {1, 2, 3}}
s:insert{2, 'two', 20}
s:replace{3, 'three'}
s:replace{2, 'two-replaced', 22}
s:delete{3}

-- UPDATE with every operation: + - & | ^ : ! # = (by field number, by field name, and on JSON paths).
s:update(1, {{'+', 3, 5}})
s:update(1, {{'-', 3, 2}})
s:update(1, {{'&', 5, 0x3C}})
s:update(1, {{'|', 5, 0x01}})
s:update(1, {{'^', 5, 0xFF}})
s:update(1, {{':', 4, 2, 3, 'XYZW'}})
s:update(1, {{'!', 8, 'inserted'}})
s:update(1, {{'#', 8, 1}})
s:update(1, {{'=', 2, 'uno'}})
s:update(1, {{'+', 3, 1.5}, {'=', 'name', 'one again'}})
s:update(1, {{'-', 3, -7}})
s:update(1, {{'=', '[6].a.b', 42}, {'!', '[7][2]', 99}, {'=', '[6].a.c', 'new key'}})
s:update(1, {{'#', '[7][1]', 1}, {'+', '[6].a.b', 1}, {':', '[6].a.c', 1, 3, 'NEW'}})
s:update({2}, {{'=', 4, box.NULL}, {'!', -1, 'appended'}})
s.index.by_name:select{}  -- reads are not logged

-- UPSERT that inserts, then UPSERT that updates the same key (with several operations).
s:upsert({10, 'ten', 1}, {{'+', 3, 1}})
s:upsert({10, 'ten?', 1}, {{'+', 3, 100}, {'=', 2, 'ten!'}, {'!', 4, 'x'}})
s:upsert({11, 'eleven'}, {})

-- DELETE through a secondary index is a DELETE with index_id 1 in the log.
local uniq = box.schema.space.create('dml_uniq')
uniq:create_index('pk')
uniq:create_index('sk', {parts = {2, 'string'}})
uniq:insert{1, 'a'}
uniq:insert{2, 'b'}
uniq.index.sk:delete{'a'}
uniq.index.sk:update({'b'}, {{'=', 3, 'via sk'}})

-- Sequences: auto-increment primary key and explicit next().
local seq_space = box.schema.space.create('dml_seq')
seq_space:create_index('pk', {sequence = true})
seq_space:insert{box.NULL, 'auto 1'}
seq_space:insert{box.NULL, 'auto 2'}
local seq = box.schema.sequence.create('dml_counter', {start = 100, step = 5})
seq:next()
seq:next()
seq:set(1000)

-- Local space: logged with group_id 1, replica_id 0, lsn from vclock[0].
local loc = box.schema.space.create('dml_local', {is_local = true})
loc:create_index('pk')
loc:insert{1, 'local one'}
loc:replace{2, 'local two'}
loc:update(1, {{'=', 2, 'local one updated'}})
loc:delete{2}

-- Temporary space: its data is never written to the WAL (only its DDL is).
local tmp = box.schema.space.create('dml_temp', {temporary = true})
tmp:create_index('pk')
tmp:insert{1, 'not logged'}
tmp:replace{2, 'not logged either'}

box.snapshot()

-- After the snapshot: a new xlog file.
s:insert{20, 'after snapshot'}
s:update(20, {{'=', 2, 'after snapshot, updated'}})
s:delete{20}
loc:insert{3, 'local after snapshot'}
s:truncate()
s:insert{30, 'after truncate'}
