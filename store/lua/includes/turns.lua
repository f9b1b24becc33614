--[[
  Where a turn is. Mirrors turnStatus in store/memory.ts. Needs head.lua and queue.lua
  (find_task: a scan of the agent's queue keys).

  The turns hash holds the status of every turn that is not the active one:
  'queued' (written by enqueue_task), 'done' / 'failed' / 'ended' (written by
  the commit that ends the turn), 'cancelled' (cancel_task). Tasks enqueued
  before the hash existed have no entry: a scan of the queue finds them
  while queued, the enqueue replay guard (`t:<turnId JSON>` in the idem
  hash) once they ran.

  `k`: { tasks, delayed, turns, idem }.
  Returns the status ('active', 'queued', 'done', 'failed', 'ended',
  'cancelled') or nil when the turn is unknown, and for 'queued' the task
  entry (`<turnId JSON>\n<task JSON>`) when the scan found it, and where
  (find_task in queue.lua).
]]
local function turn_status(k, active_json, turn_raw, turn_json)
  if active_json == turn_json then
    return 'active'
  end
  local st = redis.call('HGET', k.turns, turn_raw)
  if st == 'queued' or not st then
    local entry, where = find_task(k, turn_json)
    if entry then
      return 'queued', entry, where
    end
    if st == 'queued' then
      -- Listed as queued but no longer in the inbox: only a claim takes it out, so it ran.
      return 'ended'
    end
    if redis.call('HEXISTS', k.idem, 't:' .. turn_json) == 1 then
      return 'ended'
    end
    return nil
  end
  return st
end
