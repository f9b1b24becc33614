--[[
  delete_agent: removes an agent and every record it owns (store/port.ts
  invariant `deletion`), and its entries in the shared indexes: its bell in the
  ready queue of its target, its members of the deadline index, its entry
  in the agents index. Verdict records (the verdicts hash) are kept: they
  are the audit trail; the agent's verdict list goes.

  KEYS[1] head: head hash
  KEYS[2] turns: turns hash
  KEYS[3] deadlines: deadlines zset
  KEYS[4] agents_idx: agents zset
      (KEYS[3], KEYS[4] and the ready zset are the agent's home indexes: one slot with its keys)
  KEYS[5] deleted: the deletion marker (string): set to ARGV[3] when the
      agent existed (store/port.ts invariant `deletion-marker`); it outlives the agent
  KEYS[6..] own_keys: every other key of the agent: the fixed ones and those a SCAN
      of the agent's hash tag found (calls hashes, delivery records)
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] now_str: now (ms): the marker's value
  Undeclared keys: the ready zset of the agent's stored target; the calls
  hashes of the turns listed in the turns hash (the agent's hash tag); the
  schedules hash (it is one of KEYS[6..]) and the ready zsets of its
  schedules' targets and their schedule indexes, whose due times go too (an id with schedules and no
  head counts as an agent).
  Returns: 'deleted' | 'agent_not_found' (leftover keys given are deleted all the same), followed by
    ` {"ckFreed":...}` when it freed a reservation of the sharded layout (includes/lanes.lua)
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua

-- Arguments, named in the order of the header (described in store/script/lifecycle.ts).
local head, turns, deadlines, agents_idx = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deleted = KEYS[5]
local prefix, agent_id, now_str = ARGV[1], ARGV[2], ARGV[3]

local h = read_head(head, { 'agentId', 'workerTarget', 'activeTurnId' })
local sched = agent_key(prefix, agent_id, 'sched')
local sched_targets = {}
for _, field in ipairs(redis.call('HKEYS', sched)) do
  if string.sub(field, 1, 2) == 't:' then
    sched_targets[string.sub(field, 3)] = redis.call('HGET', sched, field)
  end
end
local found = h ~= nil or next(sched_targets) ~= nil
-- Checks done; writes follow.
for id, target in pairs(sched_targets) do
  redis.call('ZREM', prefix .. ':ready:' .. target, agent_id .. '\n' .. id)
  redis.call('ZREM', prefix .. ':ticks:' .. target, agent_id .. '\n' .. id)
end
local calls = {}
for i = 6, #KEYS do
  local turn = string.match(KEYS[i], ':calls:(.*)$')
  if turn then calls[turn] = KEYS[i] end
end
for _, turn in ipairs(redis.call('HKEYS', turns)) do
  calls[turn] = calls[turn] or agent_key(prefix, agent_id, 'calls:' .. turn)
end
local active = h and h.activeTurnId ~= 'null' and decode_stored(h.activeTurnId)
if type(active) == 'string' then
  calls[active] = calls[active] or agent_key(prefix, agent_id, 'calls:' .. active)
end
for turn, key in pairs(calls) do
  local members = {}
  for _, field in ipairs(redis.call('HKEYS', key)) do
    if string.sub(field, 1, 2) == 'c:' then
      members[#members + 1] = agent_id .. '\n' .. turn .. '\n' .. string.sub(field, 3)
    end
  end
  for i = 1, #members, 1000 do
    redis.call('ZREM', deadlines, unpack(members, i, math.min(i + 999, #members)))
  end
  redis.call('DEL', key)
end
if h then
  release_run(prefix, head, agent_id, ready_key(prefix, h.workerTarget), now_str)
  drop_bell(ready_key(prefix, h.workerTarget), agent_id)
end
redis.call('ZREM', agents_idx, agent_id)
-- The agent's own keys: head, turns and KEYS[6..] (never the shared indexes 3 and 4, nor the marker 5).
local own = { head, turns }
for i = 6, #KEYS do own[#own + 1] = KEYS[i] end
for i = 1, #own, 1000 do
  redis.call('DEL', unpack(own, i, math.min(i + 999, #own)))
end
if found then
  redis.call('SET', deleted, now_str)
end
return (found and 'deleted' or 'agent_not_found') .. freed_tail()
