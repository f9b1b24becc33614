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

-- Fair lanes (store/port.ts invariants `fair-lanes`, `concurrency-keys`,
-- `priorities`; docs/store.md). The ready zset `<prefix>:ready:<target>`
-- holds the bells of the default lane (agents whose lane is no key, and
-- schedules), as before lanes existed; lane K's bells are in
-- `<ready>:key:<K>` (same scores). An agent's lane is the head field `_ck`
-- (raw text; absent: the default lane), its priority `_cp` (seconds; absent:
-- 0). `<ready>:lanes` holds each keyed lane with bells, scored
-- max(not-before, earliest bell), not-before being `<ready>:nb`'s field for
-- the lane: when it was last served, or, parked at its limit, the earliest
-- lease end under its key. The default lane's not-before is the field "".
-- Every key here is built from the ready key, so in its slot.

-- The home prefix of a ready key (a target is [a-z0-9_-], no ':').
local function ready_prefix(ready)
  return string.match(ready, '^(.*):ready:[^:]*$')
end

-- The bells of a lane: the ready key itself for the default lane (nil or '').
local function lane_zset(ready, ck)
  if ck == nil or ck == '' then
    return ready
  end
  return ready .. ':key:' .. ck
end

-- An agent's lane (nil: the default lane), priority (seconds) and the key its lease runs under
-- (head field `_ckRun`; false: none), from its head.
local function agent_lane(ready, agent_id)
  if string.find(agent_id, '\n', 1, true) then
    return nil, 0, false
  end
  local v = redis.call('HMGET', agent_key(ready_prefix(ready), agent_id, 'head'), '_ck', '_cp', '_ckRun')
  return (v[1] and v[1] ~= '') and v[1] or nil, tonumber(v[2]) or 0, (v[3] and v[3] ~= '') and v[3] or false
end

-- Places keyed lane `ck` in the lanes zset at max(not-before, earliest bell),
-- or removes it (and its not-before) when it has no bell. Returns the place, or nil.
local function place_lane(ready, ck)
  -- no checks: it only maintains the lane index
  local first = redis.call('ZRANGE', ready .. ':key:' .. ck, 0, 0, 'WITHSCORES')
  if first[2] == nil then
    redis.call('ZREM', ready .. ':lanes', ck)
    redis.call('HDEL', ready .. ':nb', ck)
    return nil
  end
  local at = tonumber(first[2])
  local nb = tonumber(redis.call('HGET', ready .. ':nb', ck) or '')
  if nb and nb > at then
    at = nb
  end
  redis.call('ZADD', ready .. ':lanes', at, ck)
  return at
end

-- The earliest bell of the keyed lane set_bell last wrote with known[3] (the caller places the lane:
-- claim_next's serve_lane reads it instead of the lane; nil: not known).
local lane_first = nil

-- Sets an agent's bell in a ready queue (ZADD; with `lt`, ZADD LT: only
-- moves it earlier), in the zset of the agent's lane. `due_now`: the bell
-- rings for work due at once at `score`, so it is written `priority`
-- seconds earlier (invariant `priorities`); timers keep their real time.
-- When the bell becomes the earliest of its lane, earlier than its earliest
-- before (or the lane was empty), the lane's new place is published on the
-- channel named like the ready queue: every process whose worker pool
-- listens there (store/redis.ts, watchBells) learns each new earliest due
-- time of the target, now or later, without polling (actors/pool/pool.ts,
-- docs/operations.md "Idle cost"). A bell that is not its lane's new
-- earliest needs no message: the earliest before it was heard already and
-- is not later. A server that refuses PUBLISH in a script still gets the bell (pcall).
-- `known`: the agent's { ck, cp } when the caller has read them (saves the read); with
-- known[3] set the caller places the lane itself right after (claim_next's serve_lane, given `lane_first`).
-- A keyed lane's place is max(not-before, earliest bell) (place_lane) at all times; when the bell that
-- was the earliest moves later, the place is raised to the new earliest (ZADD GT: max of the old place,
-- max(not-before, old earliest), and the new earliest, which is at least the old one): no read of the
-- not-before, and the first two bells read once tell the new earliest.
local function set_bell(ready, score, agent_id, lt, due_now, known)
  -- no checks: it only maintains a bell and tells listeners
  local ck, cp
  if known then
    ck, cp = known[1], known[2]
  else
    ck, cp = agent_lane(ready, agent_id)
  end
  if due_now and cp > 0 then
    score = string.format('%d', tonumber(score) - cp * 1000)
  end
  local z = lane_zset(ready, ck)
  local first = redis.call('ZRANGE', z, 0, ck and 1 or 0, 'WITHSCORES')
  if lt then
    redis.call('ZADD', z, 'LT', score, agent_id)
  else
    redis.call('ZADD', z, score, agent_id)
  end
  local at = tonumber(score)
  local s1 = tonumber(first[2])
  if ck then
    -- The lane's place moves only when its earliest bell does: this bell was it, or goes before it.
    local earliest = s1
    if s1 == nil or at < s1 then
      earliest = at
    elseif first[1] == agent_id then
      -- This bell was the earliest and does not move earlier: the next one may now be.
      earliest = (lt and s1) or at
      if first[4] and tonumber(first[4]) < earliest then earliest = tonumber(first[4]) end
      if not (known and known[3]) then
        redis.call('ZADD', ready .. ':lanes', 'GT', string.format('%d', earliest), ck)
      end
    end
    if known and known[3] then
      lane_first = earliest
      return
    elseif earliest == at and (s1 == nil or at < s1) then
      at = place_lane(ready, ck)
    else
      return
    end
  end
  if s1 == nil or tonumber(score) < s1 then
    redis.pcall('PUBLISH', ready, string.format('%d', at))
  end
end

-- Removes an agent's bell from its lane.
local function drop_bell(ready, agent_id)
  -- no checks: it only maintains a bell
  local ck = agent_lane(ready, agent_id)
  redis.call('ZREM', lane_zset(ready, ck), agent_id)
  if ck then
    place_lane(ready, ck)
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
