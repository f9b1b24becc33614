--[[
  claim: claims one named agent. Mirrors memoryStore.claim.

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] mail: mail list
  KEYS[4] inputs: inputs hash
  KEYS[5] delayed: delayed zset (includes/queue.lua)
  KEYS[6..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  ARGV[1] prefix: home prefix
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] worker_json: workerId JSON
  ARGV[4] lease_ms: leaseMs
  ARGV[5] now_str: now
  ARGV[6] limits_json: the claim's concurrency limits as a JSON object (absent or '': none;
      store/port.ts invariant `concurrency-keys`, includes/lanes.lua)
  Undeclared keys: the ready zset of the agent's stored target and its lane keys, the
  running set of the agent's key (includes/lanes.lua); the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'claimed {"epoch":n,"head":{...},"mail":[...]}'
    'busy <leaseUntil>' | 'empty' | 'agent_not_found'
    'need {"key":K,"ready":<ready key>}' on the sharded layout (includes/claim.lua): reserve in K's slot first
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include claim.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/turn-protocol.ts).
local head, tasks, mail, inputs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delayed = KEYS[5]
local prefix, agent_id, worker_json, lease_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now_str = ARGV[5]
local limits_json = ARGV[6]

-- no checks: claim_agent checks before it writes.
local reply = claim_agent(prefix, agent_id, { head = head, tasks = tasks, delayed = delayed, mail = mail, inputs = inputs },
  worker_json, tonumber(lease_ms), tonumber(now_str), now_str, nil, nil,
  (limits_json and limits_json ~= '') and cjson.decode(limits_json) or nil)
return reply
