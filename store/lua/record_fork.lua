--[[
  record_fork: logs `forked_to` on the source of a fork. Appends one event
  and moves lastEventId; nothing else of the source changes (not its
  updatedAt, snapshot or version). Mirrors memoryStore.recordFork.

  KEYS[1] head hash   KEYS[2] events list
  ARGV[1] now         ARGV[2] event tail ({type, data} JSON without its opening brace)
  Returns: 'recorded {"eventId":n}' | 'agent_not_found'
]]
-- @include head.lua

local h = read_head(KEYS[1], { 'agentId', 'lastEventId' })
if not h then
  return 'agent_not_found'
end
local bad = check_numbers(h, { 'lastEventId' })
if bad then
  return bad
end
-- checks done
local last = append_events(KEYS[2], tonumber(h.lastEventId), 'null', ARGV[1], { ARGV[2] })
redis.call('HSET', KEYS[1], 'lastEventId', int(last))
return 'recorded {"eventId":' .. int(last) .. '}'
