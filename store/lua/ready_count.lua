--[[
  ready_count: how many bells of a worker target are due (the ready-queue
  depth). Mirrors memoryStore.readyCount.

  KEYS[1] ready: ready zset of the target
  ARGV[1] now_str: now
  Returns: 'count <n>'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local ready = KEYS[1]
local now_str = ARGV[1]

return 'count ' .. redis.call('ZCOUNT', ready, '-inf', now_str)
