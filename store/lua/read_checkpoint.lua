--[[
  read_checkpoint: the base checkpoint of a trimmed log, the one at
  eventsTrimmedThrough (store/port.ts invariant 18): the first entry of the
  checkpoints list once the log was cut.

  KEYS[1] head hash   KEYS[2] checkpoints list
  Returns: 'checkpoint {"eventId":n,"at":n,"messageIndex":n,"snapshot":...}' | 'none'
]]
-- reads only: writes nothing.

local trimmed = tonumber(redis.call('HGET', KEYS[1], 'eventsTrimmedThrough')) or 0
if trimmed == 0 then
  return 'none'
end
local first = redis.call('LINDEX', KEYS[2], 0)
if not first or not string.find(first, '^{"eventId":' .. string.format('%d', trimmed) .. ',') then
  return 'none'
end
return 'checkpoint ' .. first
