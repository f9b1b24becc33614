--[[
  Key builders. Mirror store/keys.ts: `<prefix>:{a:<agentId>}:<suffix>` for
  the records of one agent, `<prefix>:ready:<target>` for the bell of a
  worker target, `<prefix>:agents` for the index of agents by `updatedAt`.
  `prefix` is always the home prefix the script received (store/keys.ts:
  `<p>` on one Redis, `<p>:{<shard tag>}` on a Cluster), so every key built
  here is in the slot of the keys the script was given. Every script that
  writes a head's `updatedAt` writes the same score into the index.
]]
local function agent_key(prefix, agent_id, suffix)
  return prefix .. ':{a:' .. agent_id .. '}:' .. suffix
end

-- The stored workerTarget is JSON text of a token of [a-z0-9_-] (checked by
-- the adapter before it is stored), so dropping the quotes decodes it.
local function ready_key(prefix, target_json)
  return prefix .. ':ready:' .. string.sub(target_json, 2, -2)
end

-- The cross-agent index: member agentId, score the head's updatedAt.
local function agents_key(prefix)
  return prefix .. ':agents'
end
