--[[
  enqueue_task: writes a task into the agent's inbox, then rings its bell.
  Mirrors memoryStore.enqueueTask. Creates the agent on its first task.

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] idem: idem hash
  KEYS[4] events: events list
  KEYS[5] turns: turns hash
  KEYS[6] inputs: inputs hash
  KEYS[7] deleted: deletion marker (string; store/port.ts invariant `deletion-marker`)
  KEYS[8..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] agent_id_json: agentId JSON
  ARGV[4] name_json: agentName JSON
  ARGV[5] target_json: workerTarget JSON
  ARGV[6] turn_json: turnId JSON
  ARGV[7] has_key_flag: '1' when an idempotency key is given, else '0'
  ARGV[8] idem_key: idempotency key
  ARGV[9] entry: task entry: `<turnId JSON>\n<InboxTask JSON>`
  ARGV[10] event_tail: event tail (task_enqueued)
  ARGV[11] now_str: now
  ARGV[12] turn_raw: turnId (raw)
  ARGV[13] input_json: input JSON: its one stored copy (the task entry holds none)
  ARGV[14] refuse_deleted: '1': refuse when the deletion marker is set (a delegation's dispatch), else ''
  ARGV[15] run_at: a delayed task's runAt (ms, at or after now; the entry holds it too), else ''
      (store/port.ts invariant `delayed-tasks`: the task joins the queue at its join time, and the bell is set then)
  Undeclared keys: the ready zset of the agent's stored target (see docs/store.md);
  the key of a long _recentTurns (includes/head.lua).

  Returns:
    'enqueued <turnId JSON>'
    'duplicate <turnId JSON>'          (idempotency key seen before)
    'definition_conflict <name JSON>'  (the agent is bound to another definition)
    'agent_deleted <ms>'               (ARGV[14] '1' and the id was deleted; nothing written)
  Replay guard: a turn id this agent has just enqueued is a replay of an
  applied call (turn ids are fresh per request); it answers 'enqueued' again
  and writes nothing. With a key, the key's entry names the turn; without
  one, the head field _recentTurns keeps the last RECENT_TURNS turn ids
  (a replay follows its call within a reconnect), so no entry per task is
  kept (store/port.ts, invariant `idempotency-entry-with-key`).
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/turn-protocol.ts).
local head, tasks, idem, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local turns, inputs, deleted = KEYS[5], KEYS[6], KEYS[7]
local prefix, agent_id, agent_id_json, name_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local target_json, turn_json, has_key_flag, idem_key = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local entry, event_tail, now_str, turn_raw = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local input_json, refuse_deleted, run_at = ARGV[13], ARGV[14], ARGV[15]

local has_key = has_key_flag == '1'

local RECENT_TURNS = 32

if refuse_deleted == '1' then
  local deleted_at = redis.call('GET', deleted)
  if deleted_at then
    return 'agent_deleted ' .. deleted_at
  end
end

local h = read_head(head, { 'agentId', 'agentName', 'workerTarget', 'lastEventId', '_recentTurns' })
if h then
  -- A long list of recent turns lives in its own key (includes/head.lua).
  local unreadable = resolve_long(head, h, { '_recentTurns' })
  if unreadable then
    return unreadable
  end
end
local recent = (h and h._recentTurns) or ''
if h then
  if h.agentName ~= name_json then
    return 'definition_conflict ' .. h.agentName
  end
  if has_key then
    local prior = redis.call('HGET', idem, 'k:' .. idem_key)
    if prior == turn_json then
      return 'enqueued ' .. turn_json
    end
    if prior then
      return 'duplicate ' .. prior
    end
  elseif string.find('\n' .. recent .. '\n', '\n' .. turn_json .. '\n', 1, true) then
    return 'enqueued ' .. turn_json
  end
  local bad = check_numbers(h, { 'lastEventId' })
  if bad then
    return bad
  end
end

-- Checks done; writes follow.
-- The task joins the queue at its join time (invariant `delayed-tasks`).
local join_at = (run_at ~= nil and run_at ~= '') and run_at or now_str
local pending = queue_task(tasks, entry, tonumber(join_at))
if has_key then
  redis.call('HSET', idem, 'k:' .. idem_key, turn_json)
else
  -- Turn ids hold no control characters (checked by the adapter), so '\n' separates them.
  local list = {}
  for t in string.gmatch(recent, '[^\n]+') do list[#list + 1] = t end
  list[#list + 1] = turn_json
  recent = table.concat(list, '\n', math.max(1, #list - RECENT_TURNS + 1), #list)
end
redis.call('HSET', turns, turn_raw, 'queued')
redis.call('HSET', inputs, turn_raw, input_json)
local last = append_events(events, h and tonumber(h.lastEventId) or 0, turn_json, now_str, { event_tail })
if h then
  local w = { 'pendingTasks', int(pending), 'lastEventId', int(last) }
  if not has_key then
    w[#w + 1] = '_recentTurns'; w[#w + 1] = recent
  end
  set_head(head, w, h)
else
  set_head(head, {
    'agentId', agent_id_json, 'agentName', name_json, 'workerTarget', target_json,
    'createdAt', now_str, 'updatedAt', now_str, 'activeTurnId', 'null', 'currentTask', 'null',
    'epoch', '0', 'version', '0', 'snapshot', 'null', 'state', '"idle"',
    'leaseOwner', 'null', 'leaseUntil', '0', 'runnableAt', 'null',
    'pendingTasks', int(pending), 'pendingMail', '0', 'messageCount', '0', 'lastEventId', int(last),
    '_mailSeq', '0', '_recentTurns', recent,
  }, nil)
  redis.call('ZADD', agents_key(prefix), now_str, agent_id)
end
-- Ring: the bell moves earlier, never later.
set_bell(ready_key(prefix, h and h.workerTarget or target_json), join_at, agent_id, true)
return 'enqueued ' .. turn_json
