--[[
  read_events: events with id > max(after, eventsTrimmedThrough), at most
  `limit`, and at most `maxBytes` bytes of event JSON (the first event
  always comes). Ids are dense, and retention removes a prefix of the log
  (store/port.ts invariant 18), so the event with id k sits at list index
  k-1-eventsTrimmedThrough. With a budget the list is read in slices, so a
  page of large events is not loaded whole.

  KEYS[1] events list   KEYS[2] head hash
  ARGV[1] after (>= 0)   ARGV[2] limit (>= 1)   ARGV[3] maxBytes ('' = no budget)
  Returns: 'list [StoredEvent JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

local trimmed = tonumber(redis.call('HGET', KEYS[2], 'eventsTrimmedThrough')) or 0
local after, limit, budget = math.max(0, tonumber(ARGV[1]) - trimmed), tonumber(ARGV[2]), tonumber(ARGV[3])
if not budget then
  return 'list ' .. json_list(redis.call('LRANGE', KEYS[1], after, after + limit - 1))
end
local page, used, at, last = {}, 0, after, after + limit - 1
while at <= last do
  local slice = redis.call('LRANGE', KEYS[1], at, math.min(at + 15, last))
  if #slice == 0 then
    break
  end
  for i = 1, #slice do
    used = used + #slice[i]
    if #page > 0 and used > budget then
      return 'list ' .. json_list(page)
    end
    page[#page + 1] = slice[i]
  end
  at = at + #slice
end
return 'list ' .. json_list(page)
