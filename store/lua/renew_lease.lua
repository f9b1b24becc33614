--[[
  renew_lease: extends the lease of the current holder. Mirrors
  memoryStore.renewLease.

  KEYS[1] head: head hash
  ARGV[1] prefix: home prefix
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] worker_json: workerId JSON
  ARGV[4] epoch: epoch
  ARGV[5] lease_ms_text: leaseMs
  ARGV[6] now_text: now
  ARGV[7] held: the sharded layout's reservation member the caller renewed first in its key's slot
      ('' none; absent: not checked; includes/lanes.lua `slot_unrenewed`)
  Undeclared key: the ready zset of the agent's stored target.

  Returns: 'renewed <leaseUntil>' | 'lost'
    | 'slot {"ckHeld":"<K>\n<member>"}' (the lease runs on a reservation not renewed first: nothing written)
  A replay computes the same lease end: renewing is idempotent.
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head = KEYS[1]
local prefix, agent_id, worker_json, epoch = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lease_ms_text, now_text = ARGV[5], ARGV[6]
local held = ARGV[7]

local lease_ms, now = tonumber(lease_ms_text), tonumber(now_text)

local h = read_head(head, { 'agentId', 'epoch', 'leaseOwner', 'leaseUntil', 'workerTarget' })
if not h or h.epoch ~= epoch or h.leaseOwner ~= worker_json or tonumber(h.leaseUntil) <= now then
  return 'lost'
end
local want = slot_unrenewed(head, held)
if want then
  return 'slot {"ckHeld":' .. cjson.encode(want) .. '}'
end

-- Checks done; writes follow.
local until_str = int(now + lease_ms)
redis.call('HSET', head, 'leaseUntil', until_str)
set_bell(ready_key(prefix, h.workerTarget), until_str, agent_id)
renew_run(prefix, head, agent_id, until_str)
return 'renewed ' .. until_str
