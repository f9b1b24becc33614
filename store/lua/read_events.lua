--[[
  read_events: events with id > max(after, eventsTrimmedThrough), at most
  `limit`, and at most `maxBytes` bytes of event JSON (the first event
  always comes). Ids are dense, and retention removes a prefix of the log
  (store/port.ts invariant `retention`), so the event with id k sits at list index
  k-1-eventsTrimmedThrough. With a budget the list is read in slices, so a
  page of large events is not loaded whole.

  KEYS[1] events: events list
  KEYS[2] head: head hash
  ARGV[1] after_text: after (>= 0)
  ARGV[2] limit_text: limit (>= 1)
  ARGV[3] max_bytes: maxBytes ('' = no budget)
  Returns: 'list [StoredEvent JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/reads.ts).
local events, head = KEYS[1], KEYS[2]
local after_text, limit_text, max_bytes = ARGV[1], ARGV[2], ARGV[3]

local trimmed = tonumber(redis.call('HGET', head, 'eventsTrimmedThrough')) or 0
local after, limit, budget = math.max(0, tonumber(after_text) - trimmed), tonumber(limit_text), tonumber(max_bytes)
if not budget then
  return 'list ' .. json_list(redis.call('LRANGE', events, after, after + limit - 1))
end
local page, used, at, last = {}, 0, after, after + limit - 1
while at <= last do
  local slice = redis.call('LRANGE', events, at, math.min(at + 15, last))
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
