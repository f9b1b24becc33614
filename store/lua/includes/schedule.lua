--[[
  A schedule as the schedule scripts answer it (store/port.ts `Schedules`;
  the fields of the agent's `sched` hash are listed in store/keys.ts): one
  JSON text joining the stored pieces, which store/script/schedules.ts turns
  into a ScheduleRecord. nil when the schedule does not exist.
]]
local function schedule_json(sched, id)
  local f = redis.call('HMGET', sched, 'r:' .. id, 'n:' .. id, 'v:' .. id, 'l:' .. id, 'c:' .. id, 'i:' .. id)
  if not f[1] then
    return nil
  end
  return '{"record":' .. f[1] .. ',"nextTick":' .. (f[2] or 'null') .. ',"rev":' .. (f[3] or '0') ..
    ',"lastFired":' .. (f[4] or 'null') .. ',"createdAt":' .. (f[5] or '0') .. ',"input":' .. (f[6] or 'null') .. '}'
end
