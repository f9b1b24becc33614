--[[
  due_schedule: the oldest due schedule of a worker target in one home, read
  from the home's schedule index (store/port.ts invariant `schedule-index`),
  without claiming or touching any agent. Mirrors memoryStore.nextDueSchedule.
  A stale index member (schedule gone, moved to another target, or not due
  any more) is removed or moved to the schedule's next tick, as claim_next
  does with the ready queue.

  KEYS[1] ticks: the schedule index of the worker target in that home
  ARGV[1] prefix: that home's prefix
  ARGV[2] now_str: now
  ARGV[3..] names: when given, the agentName JSON texts the caller fires for
      (store/port.ts invariant `definition-sets`): a schedule of another name is left due
  Undeclared keys: the schedules hash of each visited schedule's agent (the home's slot).

  Returns:
    'schedule <schedule JSON>' (includes/schedule.lua)
    'none <score|null>'        (nothing due of those names; the earliest tick after now)
]]
-- @include keys.lua
-- @include schedule.lua

-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local ticks = KEYS[1]
local prefix, now_str = ARGV[1], ARGV[2]

-- no checks: it answers a due schedule or only maintains the index
local now = tonumber(now_str)
local names = nil
if #ARGV > 2 then
  names = {}
  for i = 3, #ARGV do names[ARGV[i]] = true end
end
local left = 0
local seen = {}
local done = false
while not done do
  local due = redis.call('ZRANGEBYSCORE', ticks, '-inf', now_str, 'LIMIT', left, 20)
  if #due == 0 then
    break
  end
  for _, m in ipairs(due) do
    -- Every visit moves, removes or leaves (counted) its member; one seen twice would mean it did not.
    if seen[m] then
      done = true
      break
    end
    seen[m] = true
    local nl = string.find(m, '\n', 1, true)
    local sched = agent_key(prefix, string.sub(m, 1, nl - 1), 'sched')
    local id = string.sub(m, nl + 1)
    local f = redis.call('HMGET', sched, 'n:' .. id, 'a:' .. id, 't:' .. id)
    if not f[1] or f[1] == 'null' or ticks ~= prefix .. ':ticks:' .. f[3] then
      redis.call('ZREM', ticks, m)
    elseif tonumber(f[1]) > now then
      redis.call('ZADD', ticks, f[1], m)
    elseif names and not names[f[2]] then
      left = left + 1
    else
      return 'schedule ' .. schedule_json(sched, id)
    end
  end
end
local after = redis.call('ZRANGEBYSCORE', ticks, '(' .. now_str, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return 'none ' .. (after[2] or 'null')
