--[[
  next_ready_at: the earliest bell of a worker target.

  KEYS[1] ready: ready zset of the target
  Undeclared keys: its lanes zset `<ready>:lanes` (includes/keys.lua), in its slot.
  Returns: 'at <score>' | 'none'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local ready = KEYS[1]

-- The default lane's earliest bell, and the earliest place of a keyed lane (store/port.ts
-- invariant `fair-lanes`: a lane parked at its limit is placed at the earliest lease end under its key).
local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
local lane = redis.call('ZRANGE', ready .. ':lanes', 0, 0, 'WITHSCORES')
if first[2] == nil or (lane[2] ~= nil and tonumber(lane[2]) < tonumber(first[2])) then
  first = lane
end
if #first == 0 then
  return 'none'
end
return 'at ' .. first[2]
