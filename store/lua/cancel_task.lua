--[[
  cancel_task: removes a queued (not yet started) task from the inbox and
  records its turn as cancelled. Mirrors memoryStore.cancelTask.

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] events: events list
  KEYS[4] turns: turns hash
  KEYS[5] idem_hash: idem hash
  KEYS[6] ended: ended list
  KEYS[7] delayed: delayed zset (includes/queue.lua)
  ARGV[1] turn_raw: turnId (raw)
  ARGV[2] turn_json: turnId JSON
  ARGV[3] now_str: now
  ARGV[4] event_tail: event tail (task_cancelled)
  Undeclared keys: the lane keys of the agent's target, when a keyed task leaves an idle agent's
  queue (includes/lanes.lua; in the agent's home, so its slot).

  The idempotency key of the task stays: it keeps answering this turn (until
  retention drops the turn: it joins the ended list, with no messages).
  Head field written: _ended (turns ended in all, includes/retention.lua).
  Returns: 'cancelled' | 'already_cancelled' (nothing written; also what a
    replay answers) | 'agent_not_found' | 'turn_not_found' | 'turn_started'
    | 'turn_finished'
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include turns.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head, tasks, events, turns = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local idem_hash, ended, delayed = KEYS[5], KEYS[6], KEYS[7]
local turn_raw, turn_json, now_str, event_tail = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local k = { tasks = tasks, delayed = delayed, turns = turns, idem = idem_hash }

local h = read_head(head, { 'agentId', 'activeTurnId', 'lastEventId', '_ended', 'workerTarget' })
if not h then
  return 'agent_not_found'
end
local st, entry, where = turn_status(k, h.activeTurnId, turn_raw, turn_json)
if not st then
  return 'turn_not_found'
elseif st == 'active' then
  return 'turn_started'
elseif st == 'cancelled' then
  return 'already_cancelled'
elseif st ~= 'queued' or not entry then
  return 'turn_finished'
end

local bad = check_numbers(h, { 'lastEventId' })
if bad then
  return bad
end

local idem = ''
local task = decode_stored(string.sub(entry, string.find(entry, '\n', 1, true) + 1))
if type(task) == 'table' and type(task.idempotencyKey) == 'string' then idem = task.idempotencyKey end

-- Checks done; writes follow.
redis.call('RPUSH', ended, turn_raw .. '\n' .. idem .. '\n0')
if where == 'list' then
  redis.call('LREM', k.tasks, 1, entry)
else
  redis.call('ZREM', k.delayed, where)
end
redis.call('HSET', k.turns, turn_raw, 'cancelled')
local last = append_events(events, tonumber(h.lastEventId), turn_json, now_str, { event_tail })
redis.call('HSET', head, 'pendingTasks', int(redis.call('LLEN', k.tasks) + redis.call('ZCARD', k.delayed)), 'lastEventId', int(last),
  '_ended', int((tonumber(h._ended) or 0) + 1))
-- With no active turn the agent's lane is its first queued task's (includes/lanes.lua); a keyed task cancelled may change it.
if h.activeTurnId == 'null' and (string.find(entry, '"concurrencyKey"', 1, true) or string.find(entry, '"priority"', 1, true)) then
  -- The agent's keys carry its home prefix before `:{a:` (an agent id holds no brace).
  relane_idle(ready_key(string.match(head, '^(.*):{a:'), h.workerTarget), h.agentId and decode_stored(h.agentId), head, k)
end
return 'cancelled'
