--[[
  delivery: transport dedup of one signed message (routes/auth), deployment
  wide. Mirrors memoryStore.claimDelivery / renewDelivery / recordDelivery
  (the invariants are in store/port.ts, DeliveryResponse).

  KEYS[1] the message's record `<p>:dlv:<messageId>`
  ARGV[1] 'claim' | 'renew' | 'record' | 'forget'   ARGV[2] now (ms)
  ARGV[3] target   ARGV[4] holder   ARGV[5] window (ms, claim and record)
  ARGV[6] hold (ms, claim and renew)   ARGV[7] response JSON (record)
  The record is `<until>\n<hold until>\n<holder>\n<target>\n<response JSON>`
  (holder and response empty when none); it is live while until > now, and
  the key expires at until.
  Returns: claim  -> 'fresh' | 'in_progress <hold until>' | 'answered <response JSON>' | 'other_target'
           renew  -> 'renewed' | 'lost'
           record, forget -> 'written' | 'lost'
]]
local mode = ARGV[1]
local now = tonumber(ARGV[2])
local target = ARGV[3]
local holder = ARGV[4]
local window = tonumber(ARGV[5])
local hold = tonumber(ARGV[6])
local fmt = function(n) return string.format('%.0f', n) end

local cur = redis.call('GET', KEYS[1])
local live = false
local untilMs, holdUntil, curHolder, curTarget, response = 0, 0, '', '', ''
if cur then
  local fields = {}
  local at = 1
  for _ = 1, 4 do
    local nl = string.find(cur, '\n', at, true)
    fields[#fields + 1] = string.sub(cur, at, nl - 1)
    at = nl + 1
  end
  untilMs = tonumber(fields[1])
  holdUntil = tonumber(fields[2])
  curHolder = fields[3]
  curTarget = fields[4]
  response = string.sub(cur, at)
  live = untilMs > now
end

if mode == 'claim' and live then
  if curTarget ~= target then return 'other_target' end
  if response ~= '' then return 'answered ' .. response end
  if curHolder ~= '' and holdUntil > now then return 'in_progress ' .. fmt(holdUntil) end
end
if mode ~= 'claim' and (not live or curTarget ~= target or curHolder ~= holder or response ~= '') then
  return 'lost'
end
-- checks done
local newUntil, newHoldUntil, newHolder, newResponse, reply = untilMs, 0, '', '', 'written'
if mode == 'claim' then
  if not live then newUntil = now + window end
  newHoldUntil = now + hold
  newHolder = holder
  reply = 'fresh'
elseif mode == 'renew' then
  newHoldUntil = now + hold
  newHolder = holder
  reply = 'renewed'
elseif mode == 'record' then
  newUntil = math.max(untilMs, now + window)
  newResponse = ARGV[7]
end
redis.call('SET', KEYS[1], fmt(newUntil) .. '\n' .. fmt(newHoldUntil) .. '\n' .. newHolder .. '\n' .. target .. '\n' .. newResponse,
  'PX', fmt(newUntil - now))
return reply
