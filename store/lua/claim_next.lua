--[[
  claim_next: claims the agent with the oldest due bell of a worker target,
  in one round trip. Mirrors memoryStore.claimNext: due bells are visited
  oldest first; an agent held by another worker has its bell moved to its
  lease end, a bell with nothing behind it is dropped (or moved to
  runnableAt), a bell of an unknown agent is removed.

  KEYS[1] ready: ready zset of the worker target in one home (one shard on a Cluster)
  ARGV[1] prefix: that home's prefix
  ARGV[2] worker_json: workerId JSON
  ARGV[3] lease_ms_text: leaseMs
  ARGV[4] now_str: now
  ARGV[5] upto_arg: visit bells up to this score only (at most now; absent: now). The
      sharded layout passes the oldest bell of the other shards, so the
      bells of all shards are visited oldest first (docs/store.md)
  ARGV[6] limits_json: the claim's concurrency limits as a JSON object ('' : none;
      store/port.ts invariant `concurrency-keys`, includes/lanes.lua)
  ARGV[7..] names: when given, the agentName JSON texts the caller may claim
      (store/port.ts invariant `definition-sets`): a claimable agent of another name is
      left as it is (its bell stays due) and counted; an entry
      `<name JSON>\n<version JSON>` lists a version the caller has of that name
      (invariant `turn-versions`, includes/claim.lua)
  Lanes (store/port.ts invariant `fair-lanes`, includes/keys.lua): when the
  target has keyed lanes with due bells, the due lanes are visited by their
  place (max of not-before and earliest bell), the default lane (KEYS[1]
  itself) at its own; a claim marks its lane served at `now`, a lane whose
  key is at its limit is parked (includes/lanes.lua). With no keyed lane the
  visit is the one of KEYS[1] alone, as before lanes existed.

  Undeclared keys: the lane keys of KEYS[1] (`<ready>:lanes`, `<ready>:nb`,
  `<ready>:key:<K>`) and the running sets of the visited agents' keys; the head, tasks, delayed, mail and inputs keys (and the head's long values) of each visited agent, built
  from the home prefix like store/keys.ts does. The agents of a home's queue
  live in that home, so on a Cluster they share KEYS[1]'s slot (docs/store.md).

  A member `<agentId>\n<scheduleId>` is a schedule's due time (store/port.ts
  invariant `schedule-tick-once`): a due one is answered (`schedule`), never
  fired here; one of another definition set is left and counted like an
  agent; a stale one is moved to its schedule's next tick or removed.
  Undeclared keys also: the schedules hash of a visited schedule's agent, and
  the schedule index of its target (a schedule missing from it is added).

  Returns:
    'claimed {"epoch":n,"head":{...},"mail":[...]}'
    'schedule <schedule JSON>' (includes/schedule.lua)
    'empty'
    'need {"key":K,"ready":KEYS[1]}' on the sharded layout: a claim would run under K, limited; reserve first
    'empty {"foreign":n,"next":score|null}' when n claimable agents of other
      names were left; `next` is the oldest bell after `upto` (the queue's
      earliest bell not left here)
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include claim.lua
-- @include schedule.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/turn-protocol.ts).
local ready = KEYS[1]
local prefix, worker_json, lease_ms_text, now_str = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local upto_arg = ARGV[5]
local limits_json = ARGV[6]

-- no checks: it refuses nothing. Each visit either claims (claim_agent checks
-- before it writes) or moves or removes the visited bell.
local lease_ms = tonumber(lease_ms_text)
local now = tonumber(now_str)
local upto = upto_arg or now_str
local names = nil
if #ARGV > 6 then
  names = {}
  for i = 7, #ARGV do
    local a = ARGV[i]
    local nl = string.find(a, '\n', 1, true)
    if nl then
      -- A version of a name (invariant `turn-versions`): the name then claims pinned turns of its listed versions only.
      names[a] = true
      names[string.sub(a, 1, nl - 1)] = 'versions'
    elseif not names[a] then
      names[a] = true
    end
  end
end
local limits = (limits_json and limits_json ~= '') and cjson.decode(limits_json) or nil
local seen = {}
-- Bells left in place (other names' agents): they stay first among the due ones, so the next batch starts after them.
local foreign = 0

local function empty()
  if foreign == 0 then
    return 'empty'
  end
  local after = redis.call('ZRANGEBYSCORE', ready, '(' .. upto, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return 'empty {"foreign":' .. int(foreign) .. ',"next":' .. (after[2] and int(tonumber(after[2])) or 'null') .. '}'
end

-- A schedule's due time: its JSON when due, 'foreign' when another set's, nil when it was stale (moved or removed).
local function visit_schedule(m)
  -- no checks: it answers a due schedule or only maintains its due time
  local nl = string.find(m, '\n', 1, true)
  local sched = agent_key(prefix, string.sub(m, 1, nl - 1), 'sched')
  local id = string.sub(m, nl + 1)
  local f = redis.call('HMGET', sched, 'n:' .. id, 'a:' .. id, 't:' .. id)
  if not f[1] or f[1] == 'null' or ready ~= prefix .. ':ready:' .. f[3] then
    redis.call('ZREM', ready, m)
    return nil
  end
  -- A schedule written before the schedule index existed joins it here (invariant `schedule-index`).
  redis.call('ZADD', prefix .. ':ticks:' .. f[3], 'NX', f[1], m)
  if tonumber(f[1]) > now then
    redis.call('ZADD', ready, f[1], m)
    return nil
  end
  if names and not names[f[2]] then
    return 'foreign'
  end
  return schedule_json(sched, id)
end

-- Visits the due bells of one lane (zset `z`, key `ck`; nil: the default lane), oldest first.
-- Returns a reply, or nil when the lane has nothing to claim now (or was parked at its limit).
-- `rotate`: other lanes are due, so a claim marks its lane served.
local function visit_lane(z, ck, rotate)
  -- no checks: each visit either claims (claim_agent checks before it writes) or moves or removes the visited bell
  -- Long because it is the visit loop of one lane with each status of a visit, as one reading.
  local skipped = 0
  while true do
    local due = redis.call('ZRANGEBYSCORE', z, '-inf', upto, 'LIMIT', skipped, 20)
    if #due == 0 then
      return nil
    end
    for _, agent_id in ipairs(due) do
      -- Every visit moves the bell past `now` or removes it, so the loop ends;
      -- a bell seen twice would mean it did not: stop rather than spin.
      if seen[agent_id] then
        return nil
      end
      seen[agent_id] = true
      local is_schedule = string.find(agent_id, '\n', 1, true) ~= nil
      local sched_reply = is_schedule and visit_schedule(agent_id)
      local lane, cp, run
      if not is_schedule then lane, cp, run = agent_lane(ready, agent_id) end
      if sched_reply == 'foreign' then
        foreign, skipped = foreign + 1, skipped + 1
      elseif sched_reply then
        return 'schedule ' .. sched_reply
      elseif not is_schedule and lane ~= ck then
        -- A bell left in another lane's zset: it joins its agent's lane.
        local score = redis.call('ZSCORE', z, agent_id)
        redis.call('ZREM', z, agent_id)
        if ck then place_lane(ready, ck) end
        set_bell(ready, score, agent_id)
      elseif not is_schedule then
        local k = {
          head = agent_key(prefix, agent_id, 'head'),
          tasks = agent_key(prefix, agent_id, 'tasks'),
          delayed = agent_key(prefix, agent_id, 'delayed'),
          mail = agent_key(prefix, agent_id, 'mail'),
          inputs = agent_key(prefix, agent_id, 'inputs'),
        }
        local reply, status, lease_until = claim_agent(prefix, agent_id, k, worker_json, lease_ms, now, now_str, ready, names, limits, { lane, cp, run, ck ~= nil })
        if status == 'claimed' then
          if ck or rotate then serve_lane(ready, ck, now_str) end
          return reply
        elseif status == 'limited' then
          return nil
        elseif status == 'need' then
          return reply
        elseif status == 'foreign' then
          foreign, skipped = foreign + 1, skipped + 1
        elseif status == 'busy' then
          set_bell(ready, int(lease_until), agent_id, nil, nil, { lane, cp })
        elseif status == 'missing' or status == 'stale' then
          -- The agent is gone, or its bell belongs to another target's queue.
          redis.call('ZREM', z, agent_id)
          if ck then place_lane(ready, ck) end
        elseif status == 'error' then
          -- An unreadable head: move its bell back by a lease so it cannot stay ahead of the others.
          set_bell(ready, int(now + lease_ms), agent_id)
        end
      end
    end
  end
end

-- The sharded layout (includes/lanes.lua `slot_check`): keys refused in their slot park their lanes; a
-- reservation under K claims from lane K only.
local slots = limits and limits['\n']
if slots then
  for ck, until_ms in pairs(type(slots.p) == 'table' and slots.p or {}) do repark(ready, ck, tonumber(until_ms), now) end
  local r = type(slots.r) == 'string' and slots.r
  if r then
    local ck = string.sub(r, 1, string.find(r, '\n', 1, true) - 1)
    -- The provisional park of the claim that asked for the reservation is over.
    ring_lane(ready, ck, now, true)
    return visit_lane(lane_zset(ready, ck), ck, true) or empty()
  end
end
local lanes = redis.call('ZRANGEBYSCORE', ready .. ':lanes', '-inf', upto, 'WITHSCORES', 'LIMIT', 0, 64)
if #lanes == 0 then
  return visit_lane(ready, nil, false) or empty()
end
-- Due lanes in least-recently-served order; the default lane at max(its not-before, its earliest due bell).
local order = {}
local d = redis.call('ZRANGEBYSCORE', ready, '-inf', upto, 'WITHSCORES', 'LIMIT', 0, 1)
local dplace = d[2] and math.max(tonumber(d[2]), tonumber(redis.call('HGET', ready .. ':nb', '') or '') or 0)
for i = 1, #lanes, 2 do
  if dplace and dplace < tonumber(lanes[i + 1]) then
    order[#order + 1] = false
    dplace = nil
  end
  order[#order + 1] = lanes[i]
end
if dplace then order[#order + 1] = false end
for _, ck in ipairs(order) do
  local r = visit_lane(lane_zset(ready, ck or nil), ck or nil, true)
  if r then
    return r
  end
end
return empty()
