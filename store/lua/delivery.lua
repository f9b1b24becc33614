--[[
  delivery: transport dedup of one signed message (routes/auth), deployment
  wide. Mirrors memoryStore.claimDelivery / renewDelivery / recordDelivery
  (the invariants are in store/port.ts, DeliveryResponse).

  KEYS[1] record: the message's record `<p>:dlv:<messageId>`
  ARGV[1] mode: 'claim' | 'renew' | 'record' | 'forget'
  ARGV[2] now_text: now (ms)
  ARGV[3] target: target
  ARGV[4] holder: holder
  ARGV[5] window_text: window (ms, claim and record)
  ARGV[6] hold_text: hold (ms, claim and renew)
  ARGV[7] response_arg: response JSON (record)
  The record is `<until>\n<hold until>\n<holder>\n<target>\n<response JSON>`
  (holder and response empty when none); it is live while until > now, and
  the key expires at until.
  Returns: claim  -> 'fresh' | 'in_progress <hold until>' | 'answered <response JSON>' | 'other_target'
           renew  -> 'renewed' | 'lost'
           record, forget -> 'written' | 'lost'
]]
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local record = KEYS[1]
local mode, now_text, target, holder = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local window_text, hold_text, response_arg = ARGV[5], ARGV[6], ARGV[7]

local now = tonumber(now_text)
local window = tonumber(window_text)
local hold = tonumber(hold_text)
local fmt = function(n) return string.format('%.0f', n) end

local cur = redis.call('GET', record)
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
  newResponse = response_arg
end
redis.call('SET', record, fmt(newUntil) .. '\n' .. fmt(newHoldUntil) .. '\n' .. newHolder .. '\n' .. target .. '\n' .. newResponse,
  'PX', fmt(newUntil - now))
return reply
