--[[
  renew_lease: extends the lease of the current holder. Mirrors
  memoryStore.renewLease.

  KEYS[1] head hash
  ARGV[1] home prefix   ARGV[2] agentId (raw)
  ARGV[3] workerId JSON
  ARGV[4] epoch       ARGV[5] leaseMs   ARGV[6] now
  Undeclared key: the ready zset of the agent's stored target.

  Returns: 'renewed <leaseUntil>' | 'lost'
  A replay computes the same lease end: renewing is idempotent.
]]
-- @include keys.lua
-- @include head.lua

local head = KEYS[1]
local prefix, agent_id, worker_json, epoch, lease_ms, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])

local h = read_head(head, { 'agentId', 'epoch', 'leaseOwner', 'leaseUntil', 'workerTarget' })
if not h or h.epoch ~= epoch or h.leaseOwner ~= worker_json or tonumber(h.leaseUntil) <= now then
  return 'lost'
end

-- Checks done; writes follow.
local until_str = int(now + lease_ms)
redis.call('HSET', head, 'leaseUntil', until_str)
set_bell(ready_key(prefix, h.workerTarget), until_str, agent_id)
return 'renewed ' .. until_str
