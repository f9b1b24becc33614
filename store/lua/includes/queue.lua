--[[
  The order of an agent's task queue (store/port.ts invariant `delayed-tasks`).
  Mirrors queueIndex, dueTask and bellAt in store/memory/records.ts. Needs
  keys.lua (set_bell) where rest_bell is used, and head.lua (decode_stored).

  `q`: { tasks, delayed } keys of the agent. A task entry is
  `<turnId JSON>\n<InboxTask JSON>`; a delayed task's JSON holds `runAt` (ms).
  Each task joins the queue at its join time (`runAt`, else the enqueue's
  now); tasks start in join order, ties by enqueue order. The queue is two
  keys, read as one: the `tasks` list, then the `delayed` sorted set.

  - `tasks` (list): tasks that joined by the time they were pushed, in join
    order. An enqueue pushes here only when its task joins now and nothing
    in `delayed` has joined by then.
  - `delayed` (zset): every other task, member `<seq>\n<entry>` (`seq`: 16
    digits of the head's `_taskSeq`, one per member), score its join time.
    Redis orders equal scores by member, so ties go by seq: enqueue order.
    A delayed task not due yet (runAt > now) joins here; so does a task
    joining now while an earlier one waits here, so it cannot pass it.

  Invariant: every entry of `tasks` joined before every member of `delayed`
  (an enqueue's join time is never before now, and a member joins `tasks`
  never). So the list's first entry, else the set's first member, is the
  next to start: a claim reads one entry, and an enqueue is one ZADD or one
  RPUSH (O(log n)), whatever the queue holds. Bound: the members whose join
  time is after now are the agent's delayed tasks (check_delayed_bound).

  Earlier layout: delayed tasks waited in the list itself, inserted by a
  walk from its tail (a LINDEX and a decode per task passed). Such a list
  still reads in join order, its not-due tasks at its tail; the first
  enqueue moves that tail into `delayed` (settle_old_tail: once, one decode
  per task moved), and until then claims read its first entry's runAt.
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

-- A `delayed` member's task entry (its seq and '\n' cut off).
local function member_entry(m)
  return string.sub(m, 18)
end

local function delayed_member(seq, entry)
  return string.format('%016d', seq) .. '\n' .. entry
end

-- Earlier layout: the list's tail of tasks not due at `now`, counted (reads only).
local function old_tail_count(tasks, now)
  local n, i = 0, -1
  while true do
    local e = redis.call('LINDEX', tasks, i)
    local r = e and entry_run_at(e)
    if not r or r <= now then
      return n
    end
    n, i = n + 1, i - 1
  end
end

-- The delayed tasks the agent holds at `now`: joining after now.
local function delayed_count(q, now)
  return redis.call('ZCOUNT', q.delayed, '(' .. string.format('%d', now), '+inf') + old_tail_count(q.tasks, now)
end

-- Earlier layout: moves the list's tail of tasks not due at `now` into `delayed`, in order. Returns the last seq used.
local function settle_old_tail(q, now, seq)
  -- no checks: it only moves entries between the agent's two queue keys
  local moved = {}
  while true do
    local e = redis.call('LINDEX', q.tasks, -1)
    local r = e and entry_run_at(e)
    if not r or r <= now then
      break
    end
    moved[#moved + 1] = { r, e }
    redis.call('RPOP', q.tasks)
  end
  for i = #moved, 1, -1 do
    seq = seq + 1
    redis.call('ZADD', q.delayed, moved[i][1], delayed_member(seq, moved[i][2]))
  end
  return seq
end

-- Queues `entry`, joining at `at` (>= now), as the header says. Returns the queue's length and the last seq used.
local function queue_task(q, entry, at, now, seq)
  -- no checks: inserts what the calling script has checked.
  seq = settle_old_tail(q, now, seq)
  local first = redis.call('ZRANGE', q.delayed, 0, 0, 'WITHSCORES')
  if at > now or (first[2] ~= nil and tonumber(first[2]) <= at) then
    seq = seq + 1
    redis.call('ZADD', q.delayed, at, delayed_member(seq, entry))
  else
    redis.call('RPUSH', q.tasks, entry)
  end
  return redis.call('LLEN', q.tasks) + redis.call('ZCARD', q.delayed), seq
end

-- The next task's join time (ms; an immediate task's in the list: `now`), or nil when none is queued.
local function next_join(q, now)
  local first = redis.call('LINDEX', q.tasks, 0)
  if first then
    return entry_run_at(first) or now
  end
  local z = redis.call('ZRANGE', q.delayed, 0, 0, 'WITHSCORES')
  return z[2] and tonumber(z[2]) or nil
end

-- The first entry's join time when it is not due at `now` (nil: no entry, or due).
local function first_not_due(q, now)
  local at = next_join(q, now)
  if at ~= nil and at > now then
    return at
  end
  return nil
end

-- A claim may take the next task: one is queued and due at `now`.
local function task_due(q, now)
  local at = next_join(q, now)
  return at ~= nil and at <= now
end

-- Takes the next task out of the queue (task_due said it is due): its entry.
local function pop_task(q)
  -- no checks: the caller checked task_due
  local e = redis.call('LPOP', q.tasks)
  if e then
    return e
  end
  return member_entry(redis.call('ZPOPMIN', q.delayed)[1])
end

-- The queued entry of a turn and where it is ('list', or its `delayed` member), or nil. A scan of both keys.
local function find_task(q, turn_json)
  local want = turn_json .. '\n'
  local all = redis.call('LRANGE', q.tasks, 0, -1)
  for i = 1, #all do
    if string.sub(all[i], 1, #want) == want then
      return all[i], 'list'
    end
  end
  all = redis.call('ZRANGE', q.delayed, 0, -1)
  for i = 1, #all do
    if string.sub(all[i], 18, 17 + #want) == want then
      return member_entry(all[i]), all[i]
    end
  end
  return nil
end

-- The first `limit` entries in queue order.
local function first_tasks(q, limit)
  local entries = redis.call('LRANGE', q.tasks, 0, limit - 1)
  if #entries < limit then
    local more = redis.call('ZRANGE', q.delayed, 0, limit - #entries - 1)
    for i = 1, #more do entries[#entries + 1] = member_entry(more[i]) end
  end
  return entries
end

-- The bell of an unleased agent with nothing claimable now: the earliest of
-- runnable ('null' or ms text) and, when no turn is active, the next task's
-- join time; ZREM when neither.
local function rest_bell(ready, agent_id, runnable, no_turn, q, now)
  -- no checks: it only maintains a bell
  local at = runnable ~= 'null' and tonumber(runnable) or nil
  if no_turn then
    local r = first_not_due(q, now)
    if r ~= nil and (at == nil or r < at) then
      at = r
    end
  end
  if at == nil then
    drop_bell(ready, agent_id)
  else
    set_bell(ready, int(at), agent_id)
  end
end
