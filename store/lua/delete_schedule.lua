--[[
  delete_schedule: removes a schedule of an agent and its due time
  (store/port.ts invariant `schedule-put`). Mirrors memoryStore.deleteSchedule.

  KEYS[1] sched: the agent's schedules hash
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] sched_id: scheduleId
  Undeclared keys: the ready zset and schedule index of the schedule's target (the agent's home).
  Returns: 'deleted' | 'absent'
]]
-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local sched = KEYS[1]
local prefix, agent_id, sched_id = ARGV[1], ARGV[2], ARGV[3]

local target = redis.call('HGET', sched, 't:' .. sched_id)
if not target then
  return 'absent'
end
-- Checks done; writes follow.
redis.call('ZREM', prefix .. ':ready:' .. target, agent_id .. '\n' .. sched_id)
redis.call('ZREM', prefix .. ':ticks:' .. target, agent_id .. '\n' .. sched_id)
local fields = {}
for _, p in ipairs({ 'r:', 'n:', 'v:', 'a:', 't:', 'l:', 'c:', 'i:', 'q:' }) do fields[#fields + 1] = p .. sched_id end
redis.call('HDEL', sched, unpack(fields))
return 'deleted'
