--[[
  ready_count: how many bells of a worker target are due (the ready-queue
  depth). Mirrors memoryStore.readyCount.

  KEYS[1] ready: ready zset of the target
  ARGV[1] now_str: now
  Undeclared keys: its lane keys `<ready>:lanes`, `<ready>:key:<K>` (includes/keys.lua), in its slot.
  Returns: 'count <n>'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local ready = KEYS[1]
local now_str = ARGV[1]

-- Every lane's due bells (store/port.ts invariant `fair-lanes`), parked lanes' included.
local n = redis.call('ZCOUNT', ready, '-inf', now_str)
for _, ck in ipairs(redis.call('ZRANGE', ready .. ':lanes', 0, -1)) do
  n = n + redis.call('ZCOUNT', ready .. ':key:' .. ck, '-inf', now_str)
end
return 'count ' .. n
