--[[
  skip_due_tool_call: takes a due record the watchdog could not process out
  of its way. Mirrors memoryStore.skipDueToolCall.

  KEYS[1] deadlines: deadlines zset
  KEYS[2] head: head hash
  KEYS[3] events: events list
  ARGV[1] member: member (`<agentId>\n<turnId>\n<toolCallId>`)
  ARGV[2] retry_at: retryAt ('null': remove the record from the due index)
  ARGV[3] now_str: now
  ARGV[4] turn_json: turnId JSON of the event
  ARGV[5] event_tail: event tail (watchdog_skipped)

  The event is logged when the agent exists and its head is readable; a
  record of an unknown agent is only moved or removed.
  Returns: 'skipped' | 'absent' (the record is no longer in the index; nothing written)
]]
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local deadlines, head, events = KEYS[1], KEYS[2], KEYS[3]
local member, retry_at, now_str, turn_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local event_tail = ARGV[5]

if not redis.call('ZSCORE', deadlines, member) then
  return 'absent'
end
local h = read_head(head, { 'agentId', 'lastEventId' })
local last = h and tonumber(h.lastEventId)

-- Checks done; writes follow.
if retry_at == 'null' then
  redis.call('ZREM', deadlines, member)
else
  redis.call('ZADD', deadlines, retry_at, member)
end
if last then
  last = append_events(events, last, turn_json, now_str, { event_tail })
  redis.call('HSET', head, 'lastEventId', int(last))
end
return 'skipped'
