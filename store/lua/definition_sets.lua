--[[
  definition_sets: records the definition set of the calling process and
  answers the others recorded in the key space (store/port.ts invariant 23).
  Mirrors memoryStore.announceDefinitionSet.

  KEYS[1] the hash `<p>:defsets`: a set's agent names, sorted and joined by
          ',' -> when a process serving it last announced it (ms)
  ARGV[1] this process's set (sorted names joined by ',')
  ARGV[2] now (ms)   ARGV[3] ttl (ms): records older than now - ttl go
  Returns: 'list [[set, seenAt], ...]' (the other sets still recorded)
]]
-- no checks: it refuses nothing (the adapter checked the numbers and names).
local own, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('HSET', KEYS[1], own, ARGV[2])
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local at = tonumber(all[i + 1]) or 0
  if at < now - ttl then
    redis.call('HDEL', KEYS[1], all[i])
  elseif all[i] ~= own then
    out[#out + 1] = '[' .. cjson.encode(all[i]) .. ',' .. string.format('%d', at) .. ']'
  end
end
return 'list [' .. table.concat(out, ',') .. ']'
