-- Workload "bulk": BULK_ROWS rows (default 400000) in transactions of 1000, one xlog large enough to cut into
-- several splits that each take a while to read (the cluster tests kill an executor while they run).
local rows = tonumber(os.getenv('BULK_ROWS') or '400000')
local s = box.schema.space.create('bulk')
s:create_index('pk')
for first = 1, rows, 1000 do
    box.begin()
    for i = first, math.min(first + 999, rows) do
        s:insert{i, 'name ' .. i, i * 1.5, i % 3 == 0, {a = i, b = 'x'}}
    end
    box.commit()
end
