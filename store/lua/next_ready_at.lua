--[[
  next_ready_at: the earliest bell of a worker target.

  KEYS[1] ready zset of the target
  Returns: 'at <score>' | 'none'
]]
-- reads only: writes nothing.
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #first == 0 then
  return 'none'
end
return 'at ' .. first[2]
