--[[
  claim: claims one named agent. Mirrors memoryStore.claim.

  KEYS[1] head hash   KEYS[2] tasks list   KEYS[3] mail list   KEYS[4] inputs hash
  ARGV[1] home prefix   ARGV[2] agentId (raw)
  ARGV[3] workerId JSON
  ARGV[4] leaseMs     ARGV[5] now
  Undeclared keys: the ready zset of the agent's stored target; the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'claimed {"epoch":n,"head":{...},"mail":[...]}'
    'busy <leaseUntil>' | 'empty' | 'agent_not_found'
]]
-- @include keys.lua
-- @include head.lua
-- @include claim.lua

-- no checks: claim_agent checks before it writes.
local reply = claim_agent(ARGV[1], ARGV[2], { head = KEYS[1], tasks = KEYS[2], mail = KEYS[3], inputs = KEYS[4] },
  ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[5], nil)
return reply
