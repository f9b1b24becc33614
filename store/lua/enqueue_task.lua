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
  KEYS[8] delayed: delayed zset (includes/queue.lua)
  KEYS[9..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
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
  ARGV[16] max_delayed: the most delayed tasks (runAt after now) the agent may hold; one more is refused
  Undeclared keys: the ready zset of the agent's stored target (see docs/store.md);
  the key of a long _recentTurns (includes/head.lua).

  Returns:
    'enqueued <turnId JSON>'
    'duplicate <turnId JSON>'          (idempotency key seen before)
    'definition_conflict <name JSON>'  (the agent is bound to another definition)
    'agent_deleted <ms>'               (ARGV[14] '1' and the id was deleted; nothing written)
    'too_many_delayed <limit>'         (a delayed task while the agent holds max_delayed; nothing written)
  The checks and writes are includes/enqueue.lua's (shared with fire_schedule.lua),
  with its replay guard (invariant `idempotency-entry-with-key`).
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include enqueue.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head, tasks, idem, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local turns, inputs, deleted, delayed = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local prefix, agent_id, agent_id_json, name_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local target_json, turn_json, has_key_flag, idem_key = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local entry, event_tail, now_str, turn_raw = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local input_json, refuse_deleted, run_at, max_delayed = ARGV[13], ARGV[14], ARGV[15], ARGV[16]

local k = { head = head, tasks = tasks, delayed = delayed, idem = idem, events = events, turns = turns, inputs = inputs, deleted = deleted }
local a = {
  prefix = prefix, agent_id = agent_id, agent_id_json = agent_id_json, name_json = name_json,
  target_json = target_json, turn_json = turn_json, has_key_flag = has_key_flag, idem_key = idem_key,
  entry = entry, event_tail = event_tail, now_str = now_str, turn_raw = turn_raw,
  input_json = input_json, refuse_deleted = refuse_deleted, run_at = run_at, max_delayed = max_delayed,
}
local reply, st = check_enqueue(k, a)
if reply then
  return reply
end
-- Checks done; writes follow.
return write_enqueue(k, a, st)
