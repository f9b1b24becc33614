--[[
  target_lease: the consumer lease of a single-consumer worker target
  (`svc1_<service>_<scope>`, actors/pool/target-lease.ts). Mirrors
  memoryStore.acquireTargetLease / releaseTargetLease.

  KEYS[1] the lease `<p>:lease:<target>`
  ARGV[1] 'acquire' | 'release'   ARGV[2] holder   ARGV[3] now (ms)   ARGV[4] lease (ms, acquire)
  The record is `<until ms>\n<holder>`; it is live while until > now.
  Returns: acquire -> 'held <until>' | 'busy <until> <holder>'
           release -> 'released' | 'not_held'
]]
local mode = ARGV[1]
local holder = ARGV[2]
local now = tonumber(ARGV[3])
local cur = redis.call('GET', KEYS[1])
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
  redis.call('DEL', KEYS[1])
  reply = 'released'
else
  local untilMs = now + tonumber(ARGV[4])
  redis.call('SET', KEYS[1], string.format('%.0f', untilMs) .. '\n' .. holder, 'PX', ARGV[4])
  reply = 'held ' .. string.format('%.0f', untilMs)
end
return reply
