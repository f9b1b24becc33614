--[[
  delivery: transport dedup of one signed message (routes/auth). Mirrors
  memoryStore.claimDelivery / recordDelivery.

  KEYS[1] the message's record `<p>:{a:<id>}:dlv:<messageId>`
  ARGV[1] 'claim' | 'record' | 'forget'   ARGV[2] now (ms)   ARGV[3] window (ms)
  ARGV[4] response JSON (record)
  The record is `<until>\n<response JSON or empty>`; it is live while until > now.
  Returns: claim  -> 'fresh' (claimed now) | 'seen <response JSON or empty>'
           record -> 'written'   forget -> 'absent'
]]
local now = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local mode = ARGV[1]
local cur = redis.call('GET', KEYS[1])
local live = nil
if cur then
  local nl = string.find(cur, '\n', 1, true)
  local untilMs = tonumber(string.sub(cur, 1, nl - 1))
  if untilMs > now then
    live = string.sub(cur, nl + 1)
  end
end
if mode == 'claim' and live then
  return 'seen ' .. live
end
-- checks done
local reply = 'absent'
if mode == 'claim' then
  redis.call('SET', KEYS[1], tostring(now + window) .. '\n', 'PX', window)
  reply = 'fresh'
elseif mode == 'record' then
  redis.call('SET', KEYS[1], tostring(now + window) .. '\n' .. ARGV[4], 'PX', window)
  reply = 'written'
else
  redis.call('DEL', KEYS[1])
end
return reply
