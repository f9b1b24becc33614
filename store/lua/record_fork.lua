--[[
  record_fork: logs `forked_to` on the source of a fork. Appends one event
  and moves lastEventId; nothing else of the source changes (not its
  updatedAt, snapshot or version). Mirrors memoryStore.recordFork.

  KEYS[1] head: head hash
  KEYS[2] events: events list
  ARGV[1] now_str: now
  ARGV[2] event_tail: event tail ({type, data} JSON without its opening brace)
  Returns: 'recorded {"eventId":n}' | 'agent_not_found'
]]
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local head, events = KEYS[1], KEYS[2]
local now_str, event_tail = ARGV[1], ARGV[2]

local h = read_head(head, { 'agentId', 'lastEventId' })
if not h then
  return 'agent_not_found'
end
local bad = check_numbers(h, { 'lastEventId' })
if bad then
  return bad
end
-- checks done
local last = append_events(events, tonumber(h.lastEventId), 'null', now_str, { event_tail })
redis.call('HSET', head, 'lastEventId', int(last))
return 'recorded {"eventId":' .. int(last) .. '}'
