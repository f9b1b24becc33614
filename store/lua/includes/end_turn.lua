--[[
  Ends the active turn of an agent from outside the machine: the worker's
  claims of the turn kept throwing (record_claim_failure.lua), or an operator
  reset it (reset_turn.lua). Mirrors prepareEndTurn in store/memory.ts. Call
  it after every check (it writes). Needs head.lua, queue.lua and lanes.lua.

  k: { head, tasks, delayed, mail, msgs, events, calls, deadlines, turns, ended } keys of the agent
  h: head fields read by the caller: activeTurnId, workerTarget,
     messageCount, version, currentTask (resolved: includes/head.lua), _ended (the turn joins the ended
     list, so retention can drop its records later: includes/retention.lua)
  turn_raw: the active turn id, raw ('' when none)
  end_at: ARGV index of the TurnEnd: snapshot JSON, state JSON, M, E, then
     M message JSONs and E event tails ({type, data} without the opening brace)
  last_event: lastEventId after the caller's own events
  extra: more head field/value pairs to write
  Returns the new version.
]]
local function end_turn(prefix, agent_id, k, h, turn_raw, end_at, last_event, now_str, extra)
  -- no checks: the calling script has checked; this ends the turn.
  local snapshot, state = ARGV[end_at], ARGV[end_at + 1]
  local n_msg, n_ev = tonumber(ARGV[end_at + 2]), tonumber(ARGV[end_at + 3])
  local message_count = tonumber(h.messageCount)
  if n_msg > 0 then
    local items = {}
    for i = 1, n_msg do items[i] = ARGV[end_at + 3 + i] end
    push_all(k.msgs, items)
    -- messageCount is logical (trimmed messages included): it counts, not the list length.
    message_count = message_count + n_msg
  end
  local tails = {}
  for i = 1, n_ev do tails[i] = ARGV[end_at + 3 + n_msg + i] end
  last_event = append_events(k.events, last_event, h.activeTurnId, now_str, tails)

  if h.activeTurnId ~= 'null' then
    -- The turn's unresolved calls can no longer be answered: off the deadline index.
    local all = redis.call('HGETALL', k.calls)
    local resolved, open = {}, {}
    for i = 1, #all, 2 do
      local kind, id = string.sub(all[i], 1, 2), string.sub(all[i], 3)
      if kind == 'r:' then resolved[id] = true elseif kind == 'c:' then open[#open + 1] = id end
    end
    local members = {}
    for _, id in ipairs(open) do
      if not resolved[id] then members[#members + 1] = agent_id .. '\n' .. turn_raw .. '\n' .. id end
    end
    if #members > 0 then
      redis.call('ZREM', k.deadlines, unpack(members))
    end
    -- Where the turn is now (includes/turns.lua).
    local final = 'ended'
    if state == '"failed"' then final = 'failed' elseif state == '"done"' then final = 'done' end
    redis.call('HSET', k.turns, turn_raw, final)
    local idem = ''
    local task = h.currentTask and h.currentTask ~= 'null' and decode_stored(h.currentTask)
    if type(task) == 'table' and type(task.idempotencyKey) == 'string' then idem = task.idempotencyKey end
    redis.call('RPUSH', k.ended, turn_raw .. '\n' .. idem .. '\n' .. int(message_count))
    extra[#extra + 1] = '_ended'
    extra[#extra + 1] = int((tonumber(h._ended) or 0) + 1)
  end
  -- Mail is for the active turn only: it goes with it.
  redis.call('DEL', k.mail)

  local version = int(tonumber(h.version) + 1)
  local w = {
    'snapshot', snapshot, 'state', state, 'version', version, 'updatedAt', now_str,
    'activeTurnId', 'null', 'currentTask', 'null', 'messageCount', int(message_count),
    'pendingMail', '0', 'lastEventId', int(last_event), 'leaseOwner', 'null', 'leaseUntil', '0',
    'runnableAt', 'null', '_failTurn', '', '_failCount', '0',
  }
  for i = 1, #extra do w[#w + 1] = extra[i] end
  set_head(k.head, w, h)
  redis.call('ZADD', agents_key(prefix), now_str, agent_id)
  local ready = ready_key(prefix, h.workerTarget)
  -- The slot of the ended turn's key frees; the agent's lane is its next task's (includes/lanes.lua).
  release_run(prefix, k.head, agent_id, ready, now_str)
  relane_idle(ready, agent_id, k.head, k)
  if task_due(k, tonumber(now_str)) then
    -- The tasks behind the turn proceed.
    set_bell(ready, now_str, agent_id, nil, true)
  else
    -- A delayed task rings when it comes due (invariant `delayed-tasks`); none: no bell.
    rest_bell(ready, agent_id, 'null', true, k, tonumber(now_str))
  end
  return version
end
