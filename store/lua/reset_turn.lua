--[[
  reset_turn: an operator ends the active turn at once with the caller's
  TurnEnd, and fences out any worker still running it (epoch + 1). Mirrors
  memoryStore.resetTurn (store/port.ts, invariant `turn-end-without-machine`).

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] mail: mail list
  KEYS[4] msgs: messages list
  KEYS[5] events: events list
  KEYS[6] calls: calls hash of the turn
  KEYS[7] deadlines: deadlines zset
  KEYS[8] turns: turns hash
  KEYS[9] ended: ended list
  KEYS[10] delayed: delayed zset (includes/queue.lua)
  KEYS[11..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] expected_version: expectedVersion
  ARGV[4] turn_json: turnId JSON
  ARGV[5] turn_raw: turnId (raw)
  ARGV[6] now_str: now
  ARGV[7..] turn_end: the TurnEnd (see includes/end_turn.lua)
  Undeclared keys: the ready zset of the agent's stored target; the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'reset {"version":v,"epoch":e}' (with `"ckFreed"` when it freed a reservation, includes/lanes.lua)
    'agent_not_found' | 'not_active' | 'conflict' (the head moved; nothing written)
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include end_turn.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head, tasks, mail, msgs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local events, calls, deadlines, turns = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local ended, delayed = KEYS[9], KEYS[10]
local prefix, agent_id, expected_version, turn_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local turn_raw, now_str = ARGV[5], ARGV[6]

local k = { head = head, tasks = tasks, mail = mail, msgs = msgs, events = events, calls = calls, deadlines = deadlines, turns = turns, ended = ended, delayed = delayed }
local expected = tonumber(expected_version)

local h = read_head(k.head, {
  'agentId', 'epoch', 'version', 'activeTurnId', 'workerTarget', 'lastEventId', 'messageCount', 'currentTask', '_ended',
})
if not h then
  return 'agent_not_found'
end
if h.activeTurnId == 'null' then
  return 'not_active'
end
if tonumber(h.version) ~= expected or h.activeTurnId ~= turn_json then
  return 'conflict'
end

local bad = check_numbers(h, { 'epoch', 'version', 'lastEventId', 'messageCount' }) or resolve_long(k.head, h, { 'currentTask' })
if bad then
  return bad
end

-- Checks done; writes follow.
local epoch = int(tonumber(h.epoch) + 1)
local version = end_turn(prefix, agent_id, k, h, turn_raw, 7, tonumber(h.lastEventId), now_str, { 'epoch', epoch })
return 'reset {"version":' .. version .. ',"epoch":' .. epoch .. freed_json() .. '}'
