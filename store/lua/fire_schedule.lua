--[[
  fire_schedule: fires one tick of a due schedule in one atomic step
  (store/port.ts invariant `schedule-tick-once`): when the schedule is still
  at the tick and revision the caller planned from, enqueues the tick's task
  exactly as enqueue_task does (includes/enqueue.lua: same checks, same
  idempotency-key dedup, same bell), records the fire, stores the next tick
  and moves the schedule's due time to it. Invariant `schedule-bounds`: a
  tick whose schedule has max_queued tasks waiting (the newest still queued)
  enqueues nothing and advances ('coalesced'); the due time is never set
  earlier than now. Mirrors memoryStore.fireScheduleTick.

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] idem: idem hash
  KEYS[4] events: events list
  KEYS[5] turns: turns hash
  KEYS[6] inputs: inputs hash
  KEYS[7] deleted: deletion marker (read by the shared checks only when refusing, never here)
  KEYS[8] sched: the agent's schedules hash
  KEYS[9] delayed: delayed zset (includes/queue.lua)
  KEYS[10..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] agent_id_json: agentId JSON
  ARGV[4] sched_id: scheduleId
  ARGV[5] expect_tick: the next tick the caller planned from (ms)
  ARGV[6] expect_rev: the revision the caller planned from
  ARGV[7] fire_tick: the tick whose task is enqueued (ms), or '' to fire nothing
  ARGV[8] next_tick: the next tick to store (ms) or 'null'
  ARGV[9] turn_json: the task's turnId JSON
  ARGV[10] idem_key: the task's idempotency key
  ARGV[11] entry: task entry: `<turnId JSON>\n<InboxTask JSON>`
  ARGV[12] event_tail: event tail (task_enqueued)
  ARGV[13] now_str: now
  ARGV[14] turn_raw: turnId (raw)
  ARGV[15] max_queued: the most tasks of the schedule that may wait at once
  Undeclared keys: the ready zsets of the schedule's and the agent's targets,
  the schedule index of the schedule's target
  (the agent's home); the key of a long _recentTurns (includes/head.lua).

  Returns:
    'fired <enqueue reply>'   (applied: 'enqueued <turn JSON>', 'duplicate <turn JSON>' or 'definition_conflict <name JSON>')
    'skipped <next tick>'     (applied with no task)
    'coalesced {"turnId":<turn JSON>,"nextTick":<next tick>}'  (applied with no task: the tick is folded into the waiting task)
    'stale <next tick>'       (the schedule moved on or was rewritten: nothing written)
    'absent'                  (no such schedule)
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include enqueue.lua
-- @include turns.lua

-- Arguments, named in the order of the header (described in store/script/schedules.ts).
local head, tasks, idem, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local turns, inputs, deleted, sched = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local delayed = KEYS[9]
local prefix, agent_id, agent_id_json, sched_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expect_tick, expect_rev, fire_tick, next_tick = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local turn_json, idem_key, entry, event_tail = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local now_str, turn_raw, max_queued = ARGV[13], ARGV[14], ARGV[15]

local f = redis.call('HMGET', sched, 'n:' .. sched_id, 'v:' .. sched_id, 'a:' .. sched_id, 't:' .. sched_id, 'i:' .. sched_id)
local cur_tick, cur_rev, name_json, target, input_json = f[1], f[2], f[3], f[4], f[5]
if not cur_rev then
  return 'absent'
end
if cur_tick ~= expect_tick or cur_rev ~= expect_rev then
  return 'stale ' .. cur_tick
end
local fire = fire_tick ~= ''
local k = { head = head, tasks = tasks, delayed = delayed, idem = idem, events = events, turns = turns, inputs = inputs, deleted = deleted }
local a = {
  prefix = prefix, agent_id = agent_id, agent_id_json = agent_id_json, name_json = name_json,
  target_json = '"' .. target .. '"', turn_json = turn_json, has_key_flag = '1', idem_key = idem_key,
  entry = entry, event_tail = event_tail, now_str = now_str, turn_raw = turn_raw,
  input_json = input_json, refuse_deleted = '',
}
local ready = prefix .. ':ready:' .. target
local member = agent_id .. '\n' .. sched_id
-- Invariant `schedule-bounds` (fair share): the due time is never earlier than now.
local score = next_tick
if next_tick ~= 'null' and tonumber(next_tick) < tonumber(now_str) then
  score = now_str
end
-- Invariant `schedule-bounds` (queue): `q:` holds the count of the schedule's tasks enqueued since its newest
-- left the queue, the newest's turnId JSON and raw, '\n'-separated; the count is current only while it waits.
local queued = 0
local q = redis.call('HGET', sched, 'q:' .. sched_id)
local q_count, q_json, q_raw = nil, nil, nil
if q then
  q_count, q_json, q_raw = string.match(q, '^(%d+)\n([^\n]*)\n(.*)$')
end
if fire and q_count then
  local h = read_head(head, { 'agentId', 'activeTurnId' })
  if h and turn_status(k, h.activeTurnId, q_raw, q_json) == 'queued' then
    queued = tonumber(q_count)
  end
end
local coalesce = fire and queued >= tonumber(max_queued)
local reply, st = nil, nil
if fire and not coalesce then
  reply, st = check_enqueue(k, a)
  -- An unreadable head refuses the step; an answer of the enqueue (a duplicate, a conflict) still advances the schedule.
  if reply and not (string.find(reply, '^enqueued ') or string.find(reply, '^duplicate ') or string.find(reply, '^definition_conflict ')) then
    return reply
  end
end
-- Checks done; writes follow.
if fire and not coalesce and not reply then
  reply = write_enqueue(k, a, st)
end
if fire and not coalesce then
  local word, turn = string.match(reply, '^(%S+) (.*)$')
  if word ~= 'definition_conflict' then
    redis.call('HSET', sched, 'l:' .. sched_id, '{"tick":' .. fire_tick .. ',"turnId":' .. turn .. ',"at":' .. now_str .. '}')
  end
  if word == 'enqueued' then
    redis.call('HSET', sched, 'q:' .. sched_id, int(queued + 1) .. '\n' .. turn_json .. '\n' .. turn_raw)
  end
end
redis.call('HSET', sched, 'n:' .. sched_id, next_tick)
if next_tick == 'null' then
  redis.call('ZREM', ready, member)
else
  set_bell(ready, score, member)
end
set_tick(prefix, target, member, next_tick)
local answer = 'skipped ' .. next_tick
if coalesce then
  answer = 'coalesced {"turnId":' .. q_json .. ',"nextTick":' .. next_tick .. '}'
elseif fire then
  answer = 'fired ' .. reply
end
return answer
