--[[
  next_ready_at: the earliest bell of a worker target.

  KEYS[1] ready: ready zset of the target
  Returns: 'at <score>' | 'none'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local ready = KEYS[1]

local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
if #first == 0 then
  return 'none'
end
return 'at ' .. first[2]
