--[[
  concurrency_usage: running and queued counts of the lanes of a worker
  target in one home (store/port.ts invariants `concurrency-keys`,
  `fair-lanes`; `Reads.concurrencyUsage`). Mirrors memoryStore.concurrencyUsage.

  KEYS[1] ready: ready zset of the target (the default lane)
  ARGV[1] prefix: the home prefix
  ARGV[2] now_str: now
  ARGV[3..] keys: when given, only these keys (else every keyed lane with bells)
  Undeclared keys: the lane keys of KEYS[1] (includes/keys.lua) and the running sets
  `<prefix>:ck:<K>:running` of the keys read (includes/lanes.lua), in its slot.
  Returns: 'usage [[key, running, queued, parkedUntil|0], ...]' (the default lane
    first, key "", when no keys are given)
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/reads.ts).
local ready = KEYS[1]
local prefix, now_str = ARGV[1], ARGV[2]

local now = tonumber(now_str)
local out = {}
local function lane(ck)
  local running = redis.call('ZCOUNT', prefix .. ':ck:' .. ck .. ':running', '(' .. now_str, '+inf')
  local queued = redis.call('ZCOUNT', ready .. ':key:' .. ck, '-inf', now_str)
  local nb = tonumber(redis.call('HGET', ready .. ':nb', ck) or '') or 0
  out[#out + 1] = { ck, running, queued, nb > now and nb or 0 }
end
if #ARGV > 2 then
  for i = 3, #ARGV do
    if ARGV[i] == '' then
      out[#out + 1] = { '', 0, redis.call('ZCOUNT', ready, '-inf', now_str), 0 }
    else
      lane(ARGV[i])
    end
  end
else
  out[#out + 1] = { '', 0, redis.call('ZCOUNT', ready, '-inf', now_str), 0 }
  for _, ck in ipairs(redis.call('ZRANGE', ready .. ':lanes', 0, -1)) do lane(ck) end
end
return 'usage ' .. cjson.encode(out)
