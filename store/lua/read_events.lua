--[[
  read_events: events with id > after, at most `limit`, and at most
  `maxBytes` bytes of event JSON (the first event always comes). Ids are
  dense from 1, so the event with id k sits at list index k-1. With a budget
  the list is read in slices, so a page of large events is not loaded whole.

  KEYS[1] events list
  ARGV[1] after (>= 0)   ARGV[2] limit (>= 1)   ARGV[3] maxBytes ('' = no budget)
  Returns: 'list [StoredEvent JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

local after, limit, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
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
