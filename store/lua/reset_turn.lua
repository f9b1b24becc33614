--[[
  reset_turn: an operator ends the active turn at once with the caller's
  TurnEnd, and fences out any worker still running it (epoch + 1). Mirrors
  memoryStore.resetTurn (store/port.ts, invariant 12).

  KEYS[1] head hash      KEYS[2] tasks list     KEYS[3] mail list
  KEYS[4] messages list  KEYS[5] events list    KEYS[6] calls hash of the turn
  KEYS[7] deadlines zset  KEYS[8] turns hash      KEYS[9] ended list
  ARGV[1] home prefix of the agent (store/keys.ts)
  ARGV[2] agentId (raw)
  ARGV[3] expectedVersion
  ARGV[4] turnId JSON
  ARGV[5] turnId (raw)
  ARGV[6] now
  ARGV[7..] the TurnEnd (see includes/end_turn.lua)
  Undeclared keys: the ready zset of the agent's stored target; the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'reset {"version":v,"epoch":e}'
    'agent_not_found' | 'not_active' | 'conflict' (the head moved; nothing written)
]]
-- @include keys.lua
-- @include head.lua
-- @include end_turn.lua

local k = { head = KEYS[1], tasks = KEYS[2], mail = KEYS[3], msgs = KEYS[4], events = KEYS[5], calls = KEYS[6], deadlines = KEYS[7], turns = KEYS[8], ended = KEYS[9] }
local prefix, agent_id, expected, turn_json, turn_raw, now_str = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]

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
return 'reset {"version":' .. version .. ',"epoch":' .. epoch .. '}'
