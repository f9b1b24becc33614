--[[
  rate_limit: GCRA check of several rate-limit buckets at once (a token's and
  an agent's). Mirrors memoryStore.rateLimit: every bucket is checked first;
  only when all admit the request is each one charged, so a refused request
  writes nothing.

  KEYS[1..] buckets: the bucket `<p>:{rl}:<bucket>` of each bucket i (same hash tag)
  ARGV[1] now_ms: now (ms)
  ARGV[2..] limits: the emission interval of each bucket i in microseconds
      (periodMs * 1000 / limit, at least 1) at ARGV[1 + i], then the
      tolerance of each in microseconds (periodMs * 1000: `limit` requests
      at once) at ARGV[1 + #KEYS + i]
  The record is the bucket's theoretical arrival time (TAT) in microseconds.
  Its expiry is only garbage collection: a minute after the TAT, where it
  limits nothing (the slack covers clocks of processes that disagree with
  Redis's; the decision itself uses `now` only).
  Returns: 'allowed' | 'limited <bucket index from 0> <retry after ms>'
]]
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local now_ms = ARGV[1]

local n = #KEYS
local nowUs = tonumber(now_ms) * 1000
local tats = {}
local worst = -1
local worstWait = 0
for i = 1, n do
  local t = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if t < nowUs then t = nowUs end
  local nextTat = t + tonumber(ARGV[1 + i])
  local allowAt = nextTat - tonumber(ARGV[1 + n + i])
  if allowAt > nowUs then
    local wait = allowAt - nowUs
    if wait > worstWait then
      worstWait = wait
      worst = i - 1
    end
  end
  tats[i] = nextTat
end
if worst >= 0 then
  return 'limited ' .. worst .. ' ' .. string.format('%.0f', math.ceil(worstWait / 1000))
end
-- checks done
for i = 1, n do
  local ttl = math.ceil((tats[i] - nowUs) / 1000) + 60000
  redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', string.format('%.0f', ttl))
end
return 'allowed'
