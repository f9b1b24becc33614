--[[
  Lanes, running sets and limits (store/port.ts invariants `concurrency-keys`,
  `fair-lanes`, `priorities`; docs/store.md). Mirrors store/memory/lanes.ts.
  Needs keys.lua (agent_lane, lane_zset, place_lane, set_bell), head.lua
  (decode_stored) and queue.lua (member_entry).

  An agent's lane (head `_ck`) is the key of the task of its active turn,
  else of its first queued task; `_cp` that task's priority. A lease taken
  for a turn of key K is recorded in K's running set
  `<prefix>:ck:<K>:running` (member agentId, score the lease end) and in
  the head field `_ckRun` = K, until the lease is released (release_run),
  renewed (renew_run: the score follows) or runs out (pruned by score when
  the set is read).

  The sharded layout (docs/store.md "Concurrency keys and lanes") counts a
  key in its own slot: its claims get the limits with the mark entry "\n"
  (never a key) = { r = '<K>\n<member>' (a reservation made in K's slot),
  p = { K = until } (keys refused there: park until) }; `slot_check` answers
  whether a claim under K may go on. The head keeps a reservation in
  `_ckRun` = `<K>\n<member>`; a release records it in `ck_freed` for the script's reply.
]]

-- The reservation a release in this script freed: { K, member } (its reply carries it: `freed_json`).
local ck_freed = nil

-- The key and priority of a task entry `<turnId JSON>\n<task JSON>` (nil, 0: none).
local function entry_lane(entry)
  if not entry or (not string.find(entry, '"concurrencyKey"', 1, true) and not string.find(entry, '"priority"', 1, true)) then
    return nil, 0
  end
  local nl = string.find(entry, '\n', 1, true)
  local t = decode_stored(string.sub(entry, nl + 1))
  if type(t) ~= 'table' then
    return nil, 0
  end
  local ck = type(t.concurrencyKey) == 'string' and t.concurrencyKey ~= '' and t.concurrencyKey or nil
  return ck, type(t.priority) == 'number' and t.priority or 0
end

-- The lane of the first queued task of `q` ({ tasks, delayed } keys).
local function first_lane(q)
  local e = redis.call('LINDEX', q.tasks, 0)
  if not e then
    local z = redis.call('ZRANGE', q.delayed, 0, 0)
    e = z[1] and member_entry(z[1])
  end
  return entry_lane(e)
end

-- Sets the agent's lane and priority; a bell it has moves to the new lane's zset.
-- `cur`: the agent's { ck, cp } when the caller has read them.
-- `unbell`: the caller sets or drops the agent's bell right after, so a bell only leaves the old lane.
local function set_lane(ready, agent_id, head_key, ck, cp, cur, unbell)
  -- no checks: it only maintains the lane of a bell
  local old_ck, old_cp
  if cur then
    old_ck, old_cp = cur[1], cur[2]
  else
    old_ck, old_cp = agent_lane(ready, agent_id)
  end
  if old_ck == ck and old_cp == cp then
    return
  end
  -- One write of the head: the fields set in one HSET, those cleared in one HDEL.
  local set, del = {}, {}
  if ck then set[#set + 1] = '_ck'; set[#set + 1] = ck else del[#del + 1] = '_ck' end
  if cp ~= 0 then set[#set + 1] = '_cp'; set[#set + 1] = string.format('%d', cp) else del[#del + 1] = '_cp' end
  if #set > 0 then redis.call('HSET', head_key, unpack(set)) end
  if #del > 0 then redis.call('HDEL', head_key, unpack(del)) end
  if old_ck == ck then
    return
  end
  local oz = lane_zset(ready, old_ck)
  if unbell then
    if redis.call('ZREM', oz, agent_id) == 1 and old_ck then place_lane(ready, old_ck) end
    return
  end
  local score = redis.call('ZSCORE', oz, agent_id)
  if score then
    redis.call('ZREM', oz, agent_id)
    if old_ck then place_lane(ready, old_ck) end
    -- The bell keeps its score in the new lane (the lane and priority just written).
    set_bell(ready, score, agent_id, nil, nil, { ck, cp })
  end
end

-- After a turn ends (or a queued task leaves): the lane of the next queued task. `cur`: the
-- agent's { ck, cp } when the caller has read them; `unbell`: see set_lane. Returns the new { ck, cp }.
local function relane_idle(ready, agent_id, head_key, q, cur, unbell)
  -- no checks: it only maintains the lane of a bell
  local ck, cp = first_lane(q)
  set_lane(ready, agent_id, head_key, ck, cp, cur, unbell)
  return { ck, cp }
end

local function running_key(prefix, ck)
  return prefix .. ':ck:' .. ck .. ':running'
end

-- The limit of key `ck` under `limits` (a decoded table, or nil): its own entry, else "*", else nil.
local function limit_of(limits, ck)
  if not limits or not ck then
    return nil
  end
  local n = limits[ck]
  if n == nil then n = limits['*'] end
  return tonumber(n)
end

-- When key `ck` is at its limit at `now`: the earliest lease end under it (a slot frees then), else nil.
-- Counts the leases that end after `now` (one ZCOUNT: a lease that ran out counts for no one); at the
-- limit it prunes those that ran out. `own`: the caller's agent id, whose lease is in the set and does
-- not count (nor answers as the earliest end).
local function lane_full(prefix, ck, limits, now, own)
  -- no checks: it answers, and prunes the leases that ran out (they count for no one)
  local n = limit_of(limits, ck)
  if not n then
    return nil
  end
  local rk = running_key(prefix, ck)
  local now_s = string.format('%d', now)
  if redis.call('ZCOUNT', rk, '(' .. now_s, '+inf') - (own and 1 or 0) < n then
    return nil
  end
  redis.call('ZREMRANGEBYSCORE', rk, '-inf', now_s)
  local first = redis.call('ZRANGE', rk, 0, 1, 'WITHSCORES')
  if own and first[1] == own then
    return tonumber(first[4])
  end
  return tonumber(first[2])
end

-- Parks lane `ck` of this target until `until_ms` (it rings again then, or at a release).
local function park_lane(ready, ck, until_ms)
  -- no checks: it only maintains the lane index
  redis.call('HSET', ready .. ':nb', ck, string.format('%d', until_ms))
  place_lane(ready, ck)
end

-- Marks a lane served at `now` (invariant `fair-lanes`: it goes behind every other due lane).
local function serve_lane(ready, ck, now_str)
  -- no checks: it only maintains the lane index
  redis.call('HSET', ready .. ':nb', ck or '', now_str)
  if ck then
    -- Its place: max(now, its earliest bell) (place_lane, the not-before known); the earliest is the one
    -- the claim's set_bell saw (keys.lua `lane_first`), read here only when not known.
    local first = lane_first
    lane_first = nil
    if first == nil then
      first = tonumber(redis.call('ZRANGE', ready .. ':key:' .. ck, 0, 0, 'WITHSCORES')[2])
    end
    if first then
      redis.call('ZADD', ready .. ':lanes', string.format('%d', math.max(first, tonumber(now_str))), ck)
    end
  end
end

-- The key of a head's `_ckRun` value: `<K>` or, on the sharded layout, `<K>\n<reservation member>`.
local function run_key(v)
  local nl = v and string.find(v, '\n', 1, true)
  if nl then
    return string.sub(v, 1, nl - 1), string.sub(v, nl + 1)
  end
  return v, nil
end

-- The head's `_ckRun` value of a lease under `ck` (`member`: the sharded layout's reservation).
local function run_value(ck, member)
  return member and (ck .. '\n' .. member) or ck
end

-- Records a lease taken under the agent's lane (none: the default lane, not counted).
-- `old`: the head's `_ckRun` when the caller has read it (false: none; nil: read here).
-- `member`: the reservation it runs on (the sharded layout), kept in `_ckRun` after the key.
-- `written`: the caller wrote `_ckRun` = run_value(ck, member) with its own write of the head.
local function run_under(prefix, head_key, agent_id, ck, until_str, old, member, written)
  -- no checks: it records a lease its caller took
  if old == nil then old = redis.call('HGET', head_key, '_ckRun') end
  if not ck and not old then
    return
  end
  local old_ck = run_key(old)
  if old_ck and old_ck ~= '' and old_ck ~= ck then
    redis.call('ZREM', running_key(prefix, old_ck), agent_id)
  end
  if ck then
    redis.call('ZADD', running_key(prefix, ck), until_str, agent_id)
    if not written then redis.call('HSET', head_key, '_ckRun', run_value(ck, member)) end
  elseif old then
    redis.call('HDEL', head_key, '_ckRun')
  end
end

-- Rings lane `ck` of target `ready` when it is parked: not-before = now, its place published when due
-- (`quiet`: not published; the caller claims from the lane itself).
local function ring_lane(ready, ck, now, quiet)
  -- no checks: it only wakes a parked lane
  local nb = tonumber(redis.call('HGET', ready .. ':nb', ck) or '')
  if nb and nb > now then
    redis.call('HSET', ready .. ':nb', ck, string.format('%d', now))
    local at = place_lane(ready, ck)
    if at and at <= now and not quiet then
      redis.pcall('PUBLISH', ready, string.format('%d', at))
    end
  end
end

-- Releases the agent's slot under the key its lease ran for, and rings that key's lane of this target if parked.
-- `known`: the head's `_ckRun` when the caller has read it (false: none; nil: read here).
-- A reservation of the sharded layout (in `_ckRun`) goes to `ck_freed`, for the caller's reply.
local function release_run(prefix, head_key, agent_id, ready, now_str, known)
  -- no checks: it frees the slot of a lease its caller released
  local run = known
  if run == nil then run = redis.call('HGET', head_key, '_ckRun') end
  if not run or run == '' then
    return
  end
  local ck, res = run_key(run)
  redis.call('ZREM', running_key(prefix, ck), agent_id)
  if res then
    ck_freed = { ck, res }
  end
  redis.call('HDEL', head_key, '_ckRun')
  ring_lane(ready, ck, tonumber(now_str) or 0)
end

-- The reply piece of a freed reservation: `,"ckFreed":"<K>\n<member>"` (none: '').
local function freed_json()
  if not ck_freed then
    return ''
  end
  return ',"ckFreed":' .. cjson.encode(ck_freed[1] .. '\n' .. ck_freed[2])
end

-- The reply tail of a refusal that freed a reservation: ` {"ckFreed":...}` (none: '').
local function freed_tail()
  return ck_freed and (' {' .. string.sub(freed_json(), 2) .. '}') or ''
end

-- A chaining commit's check of the next task's key `ck`: true when it may not chain. One Redis: at
-- the limit (the lane parked). Sharded: a limited key chains only on the ended turn's own
-- reservation (freed by the turn's end, same key), answered as the member to take back.
-- `own`: the chaining agent still holds its lease under `ck` (the ended turn's key): it does not count.
local function chain_slot(prefix, ready, ck, limits, now, own)
  -- no checks: it answers, and parks the lane it refuses
  if not ck or not limits then
    return nil
  end
  if limits['\n'] then
    if not limit_of(limits, ck) then
      return nil
    end
    if ck_freed and ck_freed[1] == ck then
      return nil, ck_freed[2]
    end
    return true
  end
  local full = lane_full(prefix, ck, limits, now, own)
  if full then
    park_lane(ready, ck, full)
  end
  return full
end

-- A lane parked provisionally (slot_check 'need') parked until `until_ms` instead when that is earlier;
-- a lane rung or served since (not-before <= now) stays due: the ring in between wins.
local function repark(ready, ck, until_ms, now)
  -- no checks: it only maintains the lane index
  local nb = tonumber(redis.call('HGET', ready .. ':nb', ck) or '')
  if nb and nb > now then
    park_lane(ready, ck, math.min(nb, until_ms))
  end
end

-- The sharded layout (header): may a claim under lane `ck` go on? nil: yes (no limit, or no key);
-- 'go', member: yes, on the reservation `member`; 'need': no, the caller reserves in K's slot first
-- (the lane is parked provisionally, until now + lease); 'limited', until: no, K is at its limit (the lane is parked).
local function slot_check(ready, ck, limits, now, lease_ms)
  -- no checks: it answers, and parks or unparks the lane it answers for
  if not ck or not limit_of(limits, ck) then
    return nil
  end
  local g = limits['\n']
  local r = type(g.r) == 'string' and g.r or ''
  if string.sub(r, 1, #ck + 1) == ck .. '\n' then
    -- Reserved: the provisional park is over.
    ring_lane(ready, ck, now, true)
    return 'go', string.sub(r, #ck + 2)
  end
  local until_ms = type(g.p) == 'table' and tonumber(g.p[ck])
  if until_ms then
    repark(ready, ck, until_ms, now)
    return 'limited', until_ms
  end
  local nb = tonumber(redis.call('HGET', ready .. ':nb', ck) or '')
  park_lane(ready, ck, (nb and nb > now) and math.min(nb, now + lease_ms) or (now + lease_ms))
  return 'need'
end

-- The sharded layout: a lease that goes on under a reservation the caller did not renew first is not
-- extended. `held`: the member the caller renewed ('' none; nil: not checked, one home); `run`: the
-- head's `_ckRun` when read (nil: read here). Answers the `<K>\n<member>` to renew first, else nil.
local function slot_unrenewed(head_key, held, run)
  if not held then
    return nil
  end
  if run == nil then run = redis.call('HGET', head_key, '_ckRun') end
  local ck, member = run_key(run)
  if member and member ~= held then
    return ck .. '\n' .. member
  end
  return nil
end

-- A renewed lease keeps its slot until the new lease end.
local function renew_run(prefix, head_key, agent_id, until_str)
  -- no checks: it follows a lease its caller renewed
  local ck = run_key(redis.call('HGET', head_key, '_ckRun'))
  if ck and ck ~= '' then
    redis.call('ZADD', running_key(prefix, ck), 'XX', until_str, agent_id)
  end
end
