--[[
  get_schedules: one schedule of an agent, or all of them by scheduleId.
  Mirrors memoryStore.getSchedule / listSchedules.

  KEYS[1] sched: the agent's schedules hash
  ARGV[1] sched_id: the scheduleId to read; absent: every schedule
  Returns: 'entry <schedule JSON>' | 'none' (one) or 'list [<schedule JSON>, ...]' (all)
]]
-- reads only: writes nothing.
-- @include schedule.lua

-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local sched = KEYS[1]
local sched_id = ARGV[1]

if sched_id then
  local one = schedule_json(sched, sched_id)
  if not one then
    return 'none'
  end
  return 'entry ' .. one
end
local ids = {}
for _, field in ipairs(redis.call('HKEYS', sched)) do
  if string.sub(field, 1, 2) == 'r:' then ids[#ids + 1] = string.sub(field, 3) end
end
table.sort(ids)
local out = {}
for i, id in ipairs(ids) do out[i] = schedule_json(sched, id) end
return 'list [' .. table.concat(out, ',') .. ']'
