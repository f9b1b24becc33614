--[[
  record_claim_failure: counts a claim of the active turn that threw; below
  maxFailures it releases the lease and offers the agent again after a
  backoff, at maxFailures it ends the turn with the caller's TurnEnd.
  Mirrors memoryStore.recordClaimFailure (store/port.ts, invariant `turn-end-without-machine`).

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
  ARGV[3] worker_json: workerId JSON
  ARGV[4] epoch: epoch
  ARGV[5] expected_version: expectedVersion
  ARGV[6] turn_json: turnId JSON ('null' when none)
  ARGV[7] turn_raw: turnId (raw, '' when none)
  ARGV[8] error_json: error JSON (a string)
  ARGV[9] max_failures_text: maxFailures
  ARGV[10] retry_base_ms: retryBaseMs
  ARGV[11] now_str: now
  ARGV[12..] turn_end: the TurnEnd (see includes/end_turn.lua)
  Undeclared keys: the ready zset of the agent's stored target; the keys of
  the head's long values (includes/head.lua `long_key`, the agent's hash tag).

  Returns:
    'retry {"failures":n,"retryAt":t}'
    'turn_failed {"failures":n,"version":v}'
    (both with `"ckFreed"` when they freed a reservation of the sharded layout, includes/lanes.lua)
    'stale' (another claim owns the agent, or the head moved: nothing written)
    'agent_not_found'
  Replay guard: a replay finds the lease released or the turn ended and
  answers 'stale', writing nothing.
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
local prefix, agent_id, worker_json, epoch = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expected_version, turn_json, turn_raw, error_json = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local max_failures_text, retry_base_ms, now_str = ARGV[9], ARGV[10], ARGV[11]

local k = { head = head, tasks = tasks, mail = mail, msgs = msgs, events = events, calls = calls, deadlines = deadlines, turns = turns, ended = ended, delayed = delayed }
local expected = tonumber(expected_version)
local max_failures, base_ms = math.max(1, tonumber(max_failures_text)), tonumber(retry_base_ms)
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
  release_run(prefix, k.head, agent_id, ready, now_str)
  set_bell(ready, retry_at, agent_id)
  -- outcome after checks done: the retry reply (the turn stays), not a refusal
  return 'retry {"failures":' .. failures .. ',"retryAt":' .. retry_at .. freed_json() .. '}'
end
local tail = '"type":"claim_failed","data":{"attempt":' .. failures .. ',"maxAttempts":' .. int(max_failures)
  .. ',"error":' .. error_json .. ',"workerId":' .. worker_json .. ',"retryAt":null}}'
local last = append_events(k.events, tonumber(h.lastEventId), turn_json, now_str, { tail })
local version = end_turn(prefix, agent_id, k, h, turn_raw, 12, last, now_str, {})
return 'turn_failed {"failures":' .. failures .. ',"version":' .. version .. freed_json() .. '}'
