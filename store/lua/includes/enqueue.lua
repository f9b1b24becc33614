--[[
  Enqueue: the checks and the writes of enqueue_task, shared with
  fire_schedule (a schedule's tick enqueues exactly as a task does; store/port.ts
  invariant `schedule-tick-once`). Needs keys.lua, head.lua, queue.lua and lanes.lua before it.

  `k`: head, tasks, delayed, idem, events, turns, inputs, deleted (the agent's keys).
  `a`: prefix, agent_id, agent_id_json, name_json, target_json, turn_json,
  has_key_flag, idem_key, entry, event_tail, now_str, turn_raw, input_json,
  refuse_deleted, run_at (optional: a delayed task's runAt, ms), max_delayed
  (optional: the bound on the agent's delayed tasks): the values
  enqueue_task.lua's header names.

  check_enqueue(k, a) reads only: it answers a reply that ends the enqueue
  (a refusal, a duplicate, a replay's 'enqueued', a delayed task over the
  bound: 'too_many_delayed <limit>'), else nil and the state
  write_enqueue needs. write_enqueue(k, a, st) writes the task, its turn,
  input, event and key, creates the head on the first task, rings the bell,
  and answers 'enqueued <turnId JSON>'.

  Replay guard: a turn id this agent has just enqueued is a replay of an
  applied call (turn ids are fresh per request); it answers 'enqueued' again
  and writes nothing. With a key, the key's entry names the turn; without
  one, the head field _recentTurns keeps the last RECENT_TURNS turn ids
  (a replay follows its call within a reconnect), so no entry per task is
  kept (store/port.ts, invariant `idempotency-entry-with-key`).
]]
local RECENT_TURNS = 32

local function check_enqueue(k, a)
  local has_key = a.has_key_flag == '1'
  if a.refuse_deleted == '1' then
    local deleted_at = redis.call('GET', k.deleted)
    if deleted_at then
      return 'agent_deleted ' .. deleted_at
    end
  end
  local h = read_head(k.head, { 'agentId', 'agentName', 'workerTarget', 'lastEventId', '_recentTurns', '_taskSeq', 'activeTurnId', '_ck', '_cp' })
  if h then
    -- A long list of recent turns lives in its own key (includes/head.lua).
    local unreadable = resolve_long(k.head, h, { '_recentTurns' })
    if unreadable then
      return unreadable
    end
  end
  local recent = (h and h._recentTurns) or ''
  if h then
    if h.agentName ~= a.name_json then
      return 'definition_conflict ' .. h.agentName
    end
    if has_key then
      local prior = redis.call('HGET', k.idem, 'k:' .. a.idem_key)
      if prior == a.turn_json then
        return 'enqueued ' .. a.turn_json
      end
      if prior then
        return 'duplicate ' .. prior
      end
    elseif string.find('\n' .. recent .. '\n', '\n' .. a.turn_json .. '\n', 1, true) then
      return 'enqueued ' .. a.turn_json
    end
    local bad = check_numbers(h, { 'lastEventId' })
    if bad then
      return bad
    end
  end
  -- The bound on delayed tasks (invariant `delayed-tasks`): counted only for a task that is delayed itself.
  local now = tonumber(a.now_str)
  local max = tonumber(a.max_delayed or '')
  if max and a.run_at ~= nil and a.run_at ~= '' and tonumber(a.run_at) > now
    and delayed_count(k, now) >= max then
    return 'too_many_delayed ' .. a.max_delayed
  end
  return nil, { h = h, recent = recent, has_key = has_key }
end

local function write_enqueue(k, a, st)
  -- no checks: the writes of an enqueue whose checks (check_enqueue) passed
  local h, recent, has_key = st.h, st.recent, st.has_key
  -- The task joins the queue at its join time (invariant `delayed-tasks`).
  local join_at = (a.run_at ~= nil and a.run_at ~= '') and a.run_at or a.now_str
  local seq0 = h and tonumber(h._taskSeq) or 0
  local pending, seq = queue_task(k, a.entry, tonumber(join_at), tonumber(a.now_str), seq0)
  if has_key then
    redis.call('HSET', k.idem, 'k:' .. a.idem_key, a.turn_json)
  else
    -- Turn ids hold no control characters (checked by the adapter), so '\n' separates them.
    local list = {}
    for t in string.gmatch(recent, '[^\n]+') do list[#list + 1] = t end
    list[#list + 1] = a.turn_json
    recent = table.concat(list, '\n', math.max(1, #list - RECENT_TURNS + 1), #list)
  end
  redis.call('HSET', k.turns, a.turn_raw, 'queued')
  redis.call('HSET', k.inputs, a.turn_raw, a.input_json)
  local last = append_events(k.events, h and tonumber(h.lastEventId) or 0, a.turn_json, a.now_str, { a.event_tail })
  if h then
    local w = { 'pendingTasks', int(pending), 'lastEventId', int(last) }
    if seq ~= seq0 then
      w[#w + 1] = '_taskSeq'; w[#w + 1] = int(seq)
    end
    if not has_key then
      w[#w + 1] = '_recentTurns'; w[#w + 1] = recent
    end
    set_head(k.head, w, h)
  else
    set_head(k.head, {
      'agentId', a.agent_id_json, 'agentName', a.name_json, 'workerTarget', a.target_json,
      'createdAt', a.now_str, 'updatedAt', a.now_str, 'activeTurnId', 'null', 'currentTask', 'null',
      'epoch', '0', 'version', '0', 'snapshot', 'null', 'state', '"idle"',
      'leaseOwner', 'null', 'leaseUntil', '0', 'runnableAt', 'null',
      'pendingTasks', int(pending), 'pendingMail', '0', 'messageCount', '0', 'lastEventId', int(last),
      '_mailSeq', '0', '_recentTurns', recent, '_taskSeq', int(seq),
    }, nil)
    redis.call('ZADD', agents_key(a.prefix), a.now_str, a.agent_id)
  end
  -- Ring: the bell moves earlier, never later.
  local ready = ready_key(a.prefix, h and h.workerTarget or a.target_json)
  -- The agent's lane (includes/lanes.lua): with no active turn, the first queued task's; a keyless queue never decodes.
  local marked = string.find(a.entry, '"concurrencyKey"', 1, true) or string.find(a.entry, '"priority"', 1, true)
  local known = { h and h._ck ~= '' and h._ck or nil, h and tonumber(h._cp) or 0 }
  if (not h and marked) or (h and h.activeTurnId == 'null' and (marked or known[1] or known[2] ~= 0)) then
    known = relane_idle(ready, a.agent_id, k.head, k, known)
  end
  set_bell(ready, join_at, a.agent_id, true, join_at == a.now_str, known)
  return 'enqueued ' .. a.turn_json
end
