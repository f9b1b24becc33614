--[[
  create_fork: a new agent from a point of another one's history (routes/
  fork.ts computes that point by replay). Writes only the new agent's keys
  (plus the cross-agent indexes: agents, ready, deadlines); the source's
  `forked_to` event is record_fork's, a call of its own. Mirrors
  memoryStore.createFork.

  KEYS[1] head: head hash
  KEYS[2] msgs: messages list
  KEYS[3] events: events list
  KEYS[4] calls: calls hash of the active turn
  KEYS[5] deadlines: deadlines zset
  KEYS[6] inputs: inputs hash
  KEYS[7] ready: ready zset of the new agent's target
  KEYS[8..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] agent_id_json: agentId JSON
  ARGV[4] name_json: agentName JSON
  ARGV[5] target_json: workerTarget JSON
  ARGV[6] snapshot: snapshot JSON
  ARGV[7] state: state JSON
  ARGV[8] turn_json: activeTurnId JSON
  ARGV[9] turn_raw: activeTurnId raw ('' when none)
  ARGV[10] current_task: currentTask JSON
  ARGV[11] input_json: input JSON of the active turn ('' : none)
  ARGV[12] runnable: runnableAt ('null' or ms)
  ARGV[13] now_str: now
  ARGV[14] event_tail: event tail ({type, data} JSON without its opening brace)
  ARGV[15] n_msg_text: number of messages (M)
  ARGV[16] n_call_text: number of tool calls (C)
  ARGV[17..] items: M x message JSON, then C x (toolCallId, record JSON without status, deadline)
  Undeclared keys: those of the new head's long values (includes/head.lua).
  Returns: 'created {"lastEventId":1}' | 'exists' (nothing written)
]]
-- @include keys.lua
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local head, msgs, events, calls = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadlines, inputs, ready = KEYS[5], KEYS[6], KEYS[7]
local prefix, agent_id, agent_id_json, name_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local target_json, snapshot, state, turn_json = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local turn_raw, current_task, input_json, runnable = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local now_str, event_tail, n_msg_text, n_call_text = ARGV[13], ARGV[14], ARGV[15], ARGV[16]

local n_msg, n_call = tonumber(n_msg_text), tonumber(n_call_text)
local msg_at = 17
local call_at = msg_at + n_msg

if redis.call('EXISTS', head) == 1 or redis.call('LLEN', events) > 0 then
  return 'exists'
end

-- Checks done; writes follow.
local message_count = 0
if n_msg > 0 then
  local items = {}
  for i = 0, n_msg - 1 do items[i + 1] = ARGV[msg_at + i] end
  message_count = push_all(msgs, items)
end
local last = append_events(events, 0, turn_json, now_str, { event_tail })
if n_call > 0 then
  local fields, scores = {}, {}
  for i = 0, n_call - 1 do
    local id = ARGV[call_at + 3 * i]
    fields[#fields + 1] = 'c:' .. id
    fields[#fields + 1] = ARGV[call_at + 3 * i + 1]
    scores[#scores + 1] = ARGV[call_at + 3 * i + 2]
    scores[#scores + 1] = agent_id .. '\n' .. turn_raw .. '\n' .. id
  end
  redis.call('HSET', calls, unpack(fields))
  redis.call('ZADD', deadlines, unpack(scores))
end
if input_json ~= '' then
  redis.call('HSET', inputs, turn_raw, input_json)
end
set_head(head, {
  'agentId', agent_id_json, 'agentName', name_json, 'workerTarget', target_json,
  'createdAt', now_str, 'updatedAt', now_str, 'activeTurnId', turn_json, 'currentTask', current_task,
  'epoch', '0', 'version', '0', 'snapshot', snapshot, 'state', state,
  'leaseOwner', 'null', 'leaseUntil', '0', 'runnableAt', runnable,
  'pendingTasks', '0', 'pendingMail', '0', 'messageCount', int(message_count), 'lastEventId', int(last),
  '_mailSeq', '0',
}, nil)
redis.call('ZADD', agents_key(prefix), now_str, agent_id)
if runnable ~= 'null' then
  set_bell(ready, runnable, agent_id)
end
return 'created {"lastEventId":' .. int(last) .. '}'
