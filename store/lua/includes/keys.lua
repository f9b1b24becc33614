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

-- Sets an agent's bell in a ready queue (ZADD; with `lt`, ZADD LT: only
-- moves it earlier). When the bell becomes the earliest of the queue, earlier
-- than its earliest before (or the queue was empty), the new score is
-- published on the channel named like the queue: every process whose worker
-- pool listens there (store/redis.ts, watchBells) learns each new earliest
-- due time of the target, now or later, without polling (actors/pool/pool.ts,
-- docs/operations.md "Idle cost"). A bell that is not the new earliest needs
-- no message: the earliest before it was heard already and is not later.
-- A server that refuses PUBLISH in a script still gets the bell (pcall).
local function set_bell(ready, score, agent_id, lt)
  -- no checks: it only maintains a bell and tells listeners
  local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
  if lt then
    redis.call('ZADD', ready, 'LT', score, agent_id)
  else
    redis.call('ZADD', ready, score, agent_id)
  end
  if first[2] == nil or tonumber(score) < tonumber(first[2]) then
    redis.pcall('PUBLISH', ready, score)
  end
end

-- Sets a schedule's member `<agentId>\n<scheduleId>` in the schedule index of
-- its target (`<prefix>:ticks:<target>`, store/port.ts invariant
-- `schedule-index`) to its next tick, or removes it for 'null'. A tick that
-- becomes the index's earliest is published on the target's bell channel
-- like a bell, so every listening pool's tick firer hears it even when an
-- earlier agent bell hides it in the ready queue.
local function set_tick(prefix, target, member, next_tick)
  -- no checks: it only maintains the index and tells listeners
  local ticks = prefix .. ':ticks:' .. target
  if next_tick == 'null' then
    redis.call('ZREM', ticks, member)
    return
  end
  local first = redis.call('ZRANGE', ticks, 0, 0, 'WITHSCORES')
  redis.call('ZADD', ticks, next_tick, member)
  if first[2] == nil or tonumber(next_tick) < tonumber(first[2]) then
    redis.pcall('PUBLISH', prefix .. ':ready:' .. target, next_tick)
  end
end

-- The cross-agent index: member agentId, score the head's updatedAt.
local function agents_key(prefix)
  return prefix .. ':agents'
end
