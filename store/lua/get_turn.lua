--[[
  get_turn: where a turn is, and its input. Mirrors memoryStore.getTurn.

  KEYS[1] head: head hash
  KEYS[2] tasks: tasks list
  KEYS[3] turns: turns hash
  KEYS[4] idem: idem hash
  KEYS[5] inputs: inputs hash
  KEYS[6] delayed: delayed zset (includes/queue.lua)
  ARGV[1] turn_raw: turnId (raw)
  ARGV[2] turn_json: turnId JSON
  Returns: 'turn {"status":"<status>"[,"input":...][,"runAt":ms]}' | 'none' (unknown agent or turn);
    runAt: a delayed task's, while queued or active (store/port.ts invariant `delayed-tasks`)
]]
-- reads only: writes nothing.
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include turns.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local head, tasks, turns, idem = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local inputs, delayed = KEYS[5], KEYS[6]
local turn_raw, turn_json = ARGV[1], ARGV[2]

local h = read_head(head, { 'agentId', 'activeTurnId', 'currentTask' })
if not h then
  return 'none'
end
local st, entry = turn_status({ tasks = tasks, delayed = delayed, turns = turns, idem = idem }, h.activeTurnId, turn_raw, turn_json)
if not st then
  return 'none'
end
local input = redis.call('HGET', inputs, turn_raw)
-- The task's JSON: the queued entry's, or the active turn's (a long currentTask lives in its key: includes/head.lua).
local task_json = nil
if st == 'queued' and entry then
  task_json = string.sub(entry, string.find(entry, '\n', 1, true) + 1)
elseif st == 'active' and resolve(head, h, 'currentTask') then
  task_json = h.currentTask
end
local run_at = ''
if task_json then
  local task = decode_stored(task_json)
  if type(task) == 'table' and type(task.runAt) == 'number' then
    run_at = ',"runAt":' .. int(task.runAt)
  end
end
return 'turn {"status":"' .. st .. '"' .. (input and (',"input":' .. input) or '') .. run_at .. '}'
