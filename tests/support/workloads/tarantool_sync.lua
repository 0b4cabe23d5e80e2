-- Workload "sync": synchronous replication rows without replicas. With replication_synchro_quorum = 1 (set
-- by the harness) a sync transaction is confirmed at once (a CONFIRM row, type 40); raising the quorum to 2
-- with a short timeout makes the next one time out (a ROLLBACK row, type 41). A before_replace trigger that
-- keeps the old tuple turns the statement into a NOP row (type 12). Run by tests/servers/tarantool.py.
local sy = box.schema.space.create('sync', {is_sync = true})
sy:create_index('pk')
sy:insert{1, 'confirmed'}
box.begin()
sy:insert{2, 'confirmed tx'}
sy:insert{3, 'confirmed tx'}
box.commit()

box.cfg{replication_synchro_quorum = 2, replication_synchro_timeout = 0.05}
local ok = pcall(sy.insert, sy, {4, 'rolled back by timeout'})
assert(not ok, 'the sync insert should have timed out')
box.cfg{replication_synchro_quorum = 1}
sy:insert{5, 'confirmed again'}

local plain = box.schema.space.create('sync_nop')
plain:create_index('pk')
plain:insert{1, 'kept'}
plain:before_replace(function(old, new) return old end)
plain:replace{1, 'ignored by the trigger'}
plain:insert{2, 'also ignored'}
