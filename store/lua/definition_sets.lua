--[[
  definition_sets: records the definition set of the calling process and
  answers the others recorded in the key space (store/port.ts invariant `definition-sets`).
  Mirrors memoryStore.announceDefinitionSet.

  KEYS[1] sets: the hash `<p>:defsets`: a set's agent names, sorted and joined by
      ',' -> when a process serving it last announced it (ms)
  ARGV[1] own: this process's set (sorted names joined by ',')
  ARGV[2] now_text: now (ms)
  ARGV[3] ttl_text: ttl (ms): records older than now - ttl go
  ARGV[4] withdraw: '1' removes the own record instead of renewing it (a process that stops), else ''
  Returns: 'list [[set, seenAt], ...]' (the other sets still recorded)
]]
-- no checks: it refuses nothing (the adapter checked the numbers and names).
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local sets = KEYS[1]
local own, now_text, ttl_text, withdraw = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local now, ttl = tonumber(now_text), tonumber(ttl_text)
if withdraw == '1' then
  redis.call('HDEL', sets, own)
else
  redis.call('HSET', sets, own, now_text)
end
local all = redis.call('HGETALL', sets)
local out = {}
for i = 1, #all, 2 do
  local at = tonumber(all[i + 1]) or 0
  if at < now - ttl then
    redis.call('HDEL', sets, all[i])
  elseif all[i] ~= own then
    out[#out + 1] = '[' .. cjson.encode(all[i]) .. ',' .. string.format('%d', at) .. ']'
  end
end
return 'list [' .. table.concat(out, ',') .. ']'
