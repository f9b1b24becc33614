--[[
  target_lease: the consumer lease of a single-consumer worker target
  (`svc1_<service>_<scope>`, actors/pool/target-lease.ts). Mirrors
  memoryStore.acquireTargetLease / releaseTargetLease.

  KEYS[1] lease: the lease `<p>:lease:<target>`
  ARGV[1] mode: 'acquire' | 'release'
  ARGV[2] holder: holder
  ARGV[3] now_text: now (ms)
  ARGV[4] lease_ms: lease (ms, acquire)
  The record is `<until ms>\n<holder>`; it is live while until > now.
  Returns: acquire -> 'held <until>' | 'busy <until> <holder>'
           release -> 'released' | 'not_held'
]]
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local lease = KEYS[1]
local mode, holder, now_text, lease_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local now = tonumber(now_text)
local cur = redis.call('GET', lease)
local curHolder = nil
local curUntil = 0
if cur then
  local nl = string.find(cur, '\n', 1, true)
  curUntil = tonumber(string.sub(cur, 1, nl - 1))
  if curUntil > now then curHolder = string.sub(cur, nl + 1) end
end
if mode == 'acquire' and curHolder and curHolder ~= holder then
  return 'busy ' .. string.format('%.0f', curUntil) .. ' ' .. curHolder
end
if mode == 'release' and curHolder ~= holder then
  return 'not_held'
end
-- checks done
local reply
if mode == 'release' then
  redis.call('DEL', lease)
  reply = 'released'
else
  local untilMs = now + tonumber(lease_ms)
  redis.call('SET', lease, string.format('%.0f', untilMs) .. '\n' .. holder, 'PX', lease_ms)
  reply = 'held ' .. string.format('%.0f', untilMs)
end
return reply
