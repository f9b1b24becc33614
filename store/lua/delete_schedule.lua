--[[
  delete_schedule: removes a schedule of an agent and its due time
  (store/port.ts invariant `schedule-put`), and logs `schedule_deleted` on
  the agent when asked to and the agent exists. Mirrors
  memoryStore.deleteSchedule.

  KEYS[1] sched: the agent's schedules hash
  KEYS[2] head: head hash (read: whether the agent exists, its lastEventId)
  KEYS[3] events: events list
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] sched_id: scheduleId
  ARGV[4] now_str: now ('' when nothing is logged)
  ARGV[5] event_tail: the schedule_deleted event tail ('' when nothing is logged)
  Undeclared keys: the ready zset and schedule index of the schedule's target (the agent's home).
  Returns: 'deleted' | 'absent'
]]
-- @include keys.lua
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local sched, head, events = KEYS[1], KEYS[2], KEYS[3]
local prefix, agent_id, sched_id, now_str, event_tail = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local target = redis.call('HGET', sched, 't:' .. sched_id)
if not target then
  return 'absent'
end
local h = nil
if event_tail ~= '' then
  h = read_head(head, { 'agentId', 'lastEventId' })
  if h then
    local bad = check_numbers(h, { 'lastEventId' })
    if bad then
      return bad
    end
  end
end
-- Checks done; writes follow.
redis.call('ZREM', prefix .. ':ready:' .. target, agent_id .. '\n' .. sched_id)
redis.call('ZREM', prefix .. ':ticks:' .. target, agent_id .. '\n' .. sched_id)
local fields = {}
for _, p in ipairs({ 'r:', 'n:', 'v:', 'a:', 't:', 'l:', 'c:', 'i:', 'q:' }) do fields[#fields + 1] = p .. sched_id end
redis.call('HDEL', sched, unpack(fields))
if h then
  local last = append_events(events, tonumber(h.lastEventId), 'null', now_str, { event_tail })
  redis.call('HSET', head, 'lastEventId', int(last))
end
return 'deleted'
