-- Workload "txn": multi-statement transactions (TSN / COMMIT flag), a transaction mixing a local and a global
-- space (the local row's TSN wraps around 2^64), rolled back transactions (not logged), and one transaction of
-- 10 000 rows (one block of ~0.5 MB). Run by tests/servers/tarantool.py after box.cfg{}.
local s = box.schema.space.create('txn')
s:create_index('pk')
local loc = box.schema.space.create('txn_local', {is_local = true})
loc:create_index('pk')

s:insert{1, 'single statement'}

box.begin()
s:insert{2, 'tx a'}
s:insert{3, 'tx a'}
s:update(2, {{'=', 2, 'tx a updated'}})
s:delete{3}
box.commit()

box.begin()
s:insert{4, 'rolled back'}
box.rollback()

box.atomic(function()
    loc:insert{1, 'local in tx'}
    s:insert{5, 'global after local'}
    loc:insert{2, 'local again'}
    s:upsert({6, 'upsert in tx'}, {{'=', 2, 'x'}})
end)

box.begin()
loc:insert{3, 'local only tx'}
loc:insert{4, 'local only tx'}
box.commit()

box.begin()
for i = 1, 10000 do
    s:insert{1000 + i, 'row ' .. i, i * 3}
end
box.commit()

box.begin()
s:replace{7, 'after the big one'}
s:replace{8, 'after the big one'}
box.commit()
s:insert{9, 'single again'}
