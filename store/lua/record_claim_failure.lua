--[[
  record_claim_failure: counts a claim of the active turn that threw; below
  maxFailures it releases the lease and offers the agent again after a
  backoff, at maxFailures it ends the turn with the caller's TurnEnd.
  Mirrors memoryStore.recordClaimFailure (store/port.ts, invariant 12).

  KEYS[1] head hash      KEYS[2] tasks list     KEYS[3] mail list
  KEYS[4] messages list  KEYS[5] events list    KEYS[6] calls hash of the turn
  KEYS[7] deadlines zset  KEYS[8] turns hash      KEYS[9] ended list
  ARGV[1]  home prefix of the agent (store/keys.ts)
  ARGV[2]  agentId (raw)
  ARGV[3]  workerId JSON
  ARGV[4]  epoch
  ARGV[5]  expectedVersion
  ARGV[6]  turnId JSON ('null' when none)
  ARGV[7]  turnId (raw, '' when none)
  ARGV[8]  error JSON (a string)
  ARGV[9]  maxFailures
  ARGV[10] retryBaseMs
  ARGV[11] now
  ARGV[12..] the TurnEnd (see includes/end_turn.lua)
  Undeclared keys: the ready zset of the agent's stored target; the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'retry {"failures":n,"retryAt":t}'
    'turn_failed {"failures":n,"version":v}'
    'stale' (another claim owns the agent, or the head moved: nothing written)
    'agent_not_found'
  Replay guard: a replay finds the lease released or the turn ended and
  answers 'stale', writing nothing.
]]
-- @include keys.lua
-- @include head.lua
-- @include end_turn.lua

local k = { head = KEYS[1], tasks = KEYS[2], mail = KEYS[3], msgs = KEYS[4], events = KEYS[5], calls = KEYS[6], deadlines = KEYS[7], turns = KEYS[8], ended = KEYS[9] }
local prefix, agent_id, worker_json, epoch = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expected, turn_json, turn_raw, error_json = tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8]
local max_failures, base_ms, now_str = math.max(1, tonumber(ARGV[9])), tonumber(ARGV[10]), ARGV[11]
local now = tonumber(now_str)

local h = read_head(k.head, {
  'agentId', 'epoch', 'leaseOwner', 'version', 'activeTurnId', 'workerTarget', 'lastEventId',
  'messageCount', '_failTurn', '_failCount', 'currentTask', '_ended',
})
if not h then
  return 'agent_not_found'
end
if h.epoch ~= epoch or h.leaseOwner ~= worker_json then
  return 'stale'
end
if tonumber(h.version) ~= expected or h.activeTurnId ~= turn_json then
  return 'stale'
end
local failures = 1
if h._failTurn == turn_json then
  failures = (tonumber(h._failCount) or 0) + 1
end

local bad = check_numbers(h, { 'version', 'lastEventId', 'messageCount' }) or resolve_long(k.head, h, { 'currentTask' })
if bad then
  return bad
end

-- Checks done; writes follow.
local ready = ready_key(prefix, h.workerTarget)
if failures < max_failures then
  local retry_at = int(now + base_ms * 2 ^ math.min(failures - 1, 5))
  local tail = '"type":"claim_failed","data":{"attempt":' .. failures .. ',"maxAttempts":' .. int(max_failures)
    .. ',"error":' .. error_json .. ',"workerId":' .. worker_json .. ',"retryAt":' .. retry_at .. '}}'
  local last = append_events(k.events, tonumber(h.lastEventId), turn_json, now_str, { tail })
  redis.call('HSET', k.head, '_failTurn', turn_json, '_failCount', int(failures), 'leaseOwner', 'null',
    'leaseUntil', '0', 'runnableAt', retry_at, 'updatedAt', now_str, 'lastEventId', int(last))
  redis.call('ZADD', agents_key(prefix), now_str, agent_id)
  set_bell(ready, retry_at, agent_id)
  -- outcome after checks done: the retry reply (the turn stays), not a refusal
  return 'retry {"failures":' .. failures .. ',"retryAt":' .. retry_at .. '}'
end
local tail = '"type":"claim_failed","data":{"attempt":' .. failures .. ',"maxAttempts":' .. int(max_failures)
  .. ',"error":' .. error_json .. ',"workerId":' .. worker_json .. ',"retryAt":null}}'
local last = append_events(k.events, tonumber(h.lastEventId), turn_json, now_str, { tail })
local version = end_turn(prefix, agent_id, k, h, turn_raw, 12, last, now_str, {})
return 'turn_failed {"failures":' .. failures .. ',"version":' .. version .. '}'
