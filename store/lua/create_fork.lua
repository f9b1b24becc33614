--[[
  create_fork: a new agent from a point of another one's history (routes/
  fork.ts computes that point by replay). Writes only the new agent's keys
  (plus the cross-agent indexes: agents, ready, deadlines); the source's
  `forked_to` event is record_fork's, a call of its own. Mirrors
  memoryStore.createFork.

  KEYS[1] head hash   KEYS[2] messages list  KEYS[3] events list
  KEYS[4] calls hash of the active turn      KEYS[5] deadlines zset
  KEYS[6] inputs hash KEYS[7] ready zset of the new agent's target
  ARGV[1]  home prefix of the agent (store/keys.ts)
  ARGV[2]  agentId (raw)          ARGV[3]  agentId JSON
  ARGV[4]  agentName JSON         ARGV[5]  workerTarget JSON
  ARGV[6]  snapshot JSON          ARGV[7]  state JSON
  ARGV[8]  activeTurnId JSON      ARGV[9]  activeTurnId raw ('' when none)
  ARGV[10] currentTask JSON       ARGV[11] input JSON of the active turn ('' : none)
  ARGV[12] runnableAt ('null' or ms)
  ARGV[13] now
  ARGV[14] event tail ({type, data} JSON without its opening brace)
  ARGV[15] number of messages (M)  ARGV[16] number of tool calls (C)
  then M x message JSON, C x (toolCallId, record JSON without status, deadline)
  Undeclared keys: those of the new head's long values (includes/head.lua).
  Returns: 'created {"lastEventId":1}' | 'exists' (nothing written)
]]
-- @include keys.lua
-- @include head.lua

local head, msgs, events, calls, deadlines, inputs, ready = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local prefix, agent_id, agent_id_json = ARGV[1], ARGV[2], ARGV[3]
local turn_json, turn_raw = ARGV[8], ARGV[9]
local runnable, now_str = ARGV[12], ARGV[13]
local n_msg, n_call = tonumber(ARGV[15]), tonumber(ARGV[16])
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
local last = append_events(events, 0, turn_json, now_str, { ARGV[14] })
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
if ARGV[11] ~= '' then
  redis.call('HSET', inputs, turn_raw, ARGV[11])
end
set_head(head, {
  'agentId', agent_id_json, 'agentName', ARGV[4], 'workerTarget', ARGV[5],
  'createdAt', now_str, 'updatedAt', now_str, 'activeTurnId', turn_json, 'currentTask', ARGV[10],
  'epoch', '0', 'version', '0', 'snapshot', ARGV[6], 'state', ARGV[7],
  'leaseOwner', 'null', 'leaseUntil', '0', 'runnableAt', runnable,
  'pendingTasks', '0', 'pendingMail', '0', 'messageCount', int(message_count), 'lastEventId', int(last),
  '_mailSeq', '0',
}, nil)
redis.call('ZADD', agents_key(prefix), now_str, agent_id)
if runnable ~= 'null' then
  set_bell(ready, runnable, agent_id)
end
return 'created {"lastEventId":' .. int(last) .. '}'
