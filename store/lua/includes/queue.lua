--[[
  The order of an agent's task queue (store/port.ts invariant `delayed-tasks`).
  Mirrors queueIndex, dueTask and bellAt in store/memory/records.ts. Needs
  keys.lua (set_bell) where rest_bell is used, and head.lua (decode_stored).

  A task entry is `<turnId JSON>\n<InboxTask JSON>`; a delayed task's JSON
  holds `runAt` (ms). Each task joins the queue at its join time (`runAt`,
  else the enqueue's now) and the list keeps join order, ties by enqueue
  order, so its first entry is always the next to start.
]]

-- A task entry's runAt, or nil (no delay).
local function entry_run_at(entry)
  local nl = string.find(entry, '\n', 1, true)
  local task = decode_stored(string.sub(entry, nl + 1))
  if type(task) == 'table' and type(task.runAt) == 'number' then
    return task.runAt
  end
  return nil
end

-- Inserts `entry`, joining at `at`, after every entry that has joined by then:
-- from the tail it passes over only delayed entries whose runAt is later.
-- Returns the list length.
local function queue_task(tasks, entry, at)
  -- no checks: inserts what the calling script has checked.
  local n = redis.call('LLEN', tasks)
  local i = n
  local pivot = nil
  while i > 0 do
    local e = redis.call('LINDEX', tasks, i - 1)
    local r = entry_run_at(e)
    if r == nil or r <= at then
      break
    end
    pivot = e
    i = i - 1
  end
  if pivot == nil then
    return redis.call('RPUSH', tasks, entry)
  end
  -- Entries start with their (unique) turn id, so the pivot is found exactly.
  return redis.call('LINSERT', tasks, 'BEFORE', pivot, entry)
end

-- The first entry's runAt when it is not due at `now` (nil: no entry, or due).
local function first_not_due(tasks, now)
  local first = redis.call('LINDEX', tasks, 0)
  if not first then
    return nil
  end
  local r = entry_run_at(first)
  if r ~= nil and r > now then
    return r
  end
  return nil
end

-- A claim may take the first task: one is queued and due at `now`.
local function task_due(tasks, now)
  return redis.call('LLEN', tasks) > 0 and first_not_due(tasks, now) == nil
end

-- The bell of an unleased agent with nothing claimable now: the earliest of
-- runnable ('null' or ms text) and, when no turn is active, the first task's
-- runAt; ZREM when neither.
local function rest_bell(ready, agent_id, runnable, no_turn, tasks, now)
  -- no checks: it only maintains a bell
  local at = runnable ~= 'null' and tonumber(runnable) or nil
  if no_turn then
    local r = first_not_due(tasks, now)
    if r ~= nil and (at == nil or r < at) then
      at = r
    end
  end
  if at == nil then
    redis.call('ZREM', ready, agent_id)
  else
    set_bell(ready, int(at), agent_id)
  end
end
