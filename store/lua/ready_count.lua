--[[
  ready_count: how many bells of a worker target are due (the ready-queue
  depth). Mirrors memoryStore.readyCount.

  KEYS[1] ready zset of the target
  ARGV[1] now
  Returns: 'count <n>'
]]
-- reads only: writes nothing.
return 'count ' .. redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
