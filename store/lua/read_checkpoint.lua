--[[
  read_checkpoint: the base checkpoint of a trimmed log, the one at
  eventsTrimmedThrough (store/port.ts invariant `retention`): the first entry of the
  checkpoints list once the log was cut.

  KEYS[1] head: head hash
  KEYS[2] ckpts: checkpoints list
  Returns: 'checkpoint {"eventId":n,"at":n,"messageIndex":n,"snapshot":...}' | 'none'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/reads.ts).
local head, ckpts = KEYS[1], KEYS[2]

local trimmed = tonumber(redis.call('HGET', head, 'eventsTrimmedThrough')) or 0
if trimmed == 0 then
  return 'none'
end
local first = redis.call('LINDEX', ckpts, 0)
if not first or not string.find(first, '^{"eventId":' .. string.format('%d', trimmed) .. ',') then
  return 'none'
end
return 'checkpoint ' .. first
