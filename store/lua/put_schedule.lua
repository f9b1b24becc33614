--[[
  put_schedule: creates or replaces a schedule of an agent and sets its due
  time in its target's ready queue (store/port.ts invariant `schedule-put`).
  Mirrors memoryStore.putSchedule.

  KEYS[1] head: head hash (read: the binding to a definition)
  KEYS[2] sched: the agent's schedules hash
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] sched_id: scheduleId
  ARGV[4] name_json: agentName JSON
  ARGV[5] target: worker target (raw)
  ARGV[6] record_json: the record's own fields (agentId, scheduleId, agentName, workerTarget, spec without input, updatedAt)
  ARGV[7] input_json: the task input JSON
  ARGV[8] next_tick: the first tick (ms) or 'null'
  ARGV[9] now_str: now
  ARGV[10] max_schedules: the most schedules the agent may hold (store/port.ts invariant `schedule-bounds`)
  ARGV[11] expect_rev: write only over this revision of an existing schedule, or '' for any
  Undeclared keys: the ready zsets and schedule indexes of the old and the new target (the agent's home).

  Returns:
    'created <schedule JSON>' | 'replaced <schedule JSON>' (includes/schedule.lua)
    'definition_conflict <name JSON>'  (the agent is bound to another definition; nothing written)
    'schedule_limit <limit>'  (a new schedule past the agent's bound; nothing written)
    'stale'                   (expect_rev given and the schedule absent or at another revision; nothing written)
]]
-- @include keys.lua
-- @include head.lua
-- @include schedule.lua

-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local head, sched = KEYS[1], KEYS[2]
local prefix, agent_id, sched_id, name_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local target, record_json, input_json, next_tick = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local now_str, max_schedules, expect_rev = ARGV[9], ARGV[10], ARGV[11]

local h = read_head(head, { 'agentName' })
if h and h.agentName ~= name_json then
  return 'definition_conflict ' .. h.agentName
end
local old_target = redis.call('HGET', sched, 't:' .. sched_id)
if expect_rev ~= '' and redis.call('HGET', sched, 'v:' .. sched_id) ~= expect_rev then
  return 'stale'
end
if not old_target then
  -- Invariant `schedule-bounds`: count the agent's schedules (one `r:` field each) in this step.
  local count = 0
  for _, field in ipairs(redis.call('HKEYS', sched)) do
    if string.sub(field, 1, 2) == 'r:' then count = count + 1 end
  end
  if count >= tonumber(max_schedules) then
    return 'schedule_limit ' .. max_schedules
  end
end
local rev = tonumber(redis.call('HGET', sched, 'v:' .. sched_id) or '0') + 1
-- Checks done; writes follow.
local member = agent_id .. '\n' .. sched_id
if old_target then
  redis.call('ZREM', prefix .. ':ready:' .. old_target, member)
  redis.call('ZREM', prefix .. ':ticks:' .. old_target, member)
end
redis.call('HSET', sched, 'r:' .. sched_id, record_json, 'n:' .. sched_id, next_tick, 'v:' .. sched_id, int(rev),
  'a:' .. sched_id, name_json, 't:' .. sched_id, target, 'i:' .. sched_id, input_json)
redis.call('HSETNX', sched, 'c:' .. sched_id, now_str)
if next_tick ~= 'null' then
  -- A new earliest due time is published like any bell (includes/keys.lua).
  set_bell(prefix .. ':ready:' .. target, next_tick, member)
end
set_tick(prefix, target, member, next_tick)
return (old_target and 'replaced ' or 'created ') .. schedule_json(sched, sched_id)
