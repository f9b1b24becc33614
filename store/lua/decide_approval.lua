--[[
  decide_approval: the first decision on a call that waits for a person's
  approval wins (store/port.ts invariant `first-decision-wins`). Mirrors
  memoryStore.decideApproval (store/memory/approvals.ts).

  KEYS[1] head: head hash
  KEYS[2] calls: calls hash of the turn
  KEYS[3] mail: mail list
  KEYS[4] events: events list
  KEYS[5] deadlines: deadlines zset
  ARGV[1] prefix: home prefix
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] turn_json: turnId JSON
  ARGV[4] turn_id: turnId (raw)
  ARGV[5] call_id: toolCallId (raw)
  ARGV[6] decision: 'approved' | 'rejected' | 'timeout'
  ARGV[7] now_str: now
  ARGV[8] approval_tail: the decided approval after its runMs: ',"status":..,"decidedAt":..[,"reason":..][,"args":..]}'
  ARGV[9] resolution: (rejected, timeout) the resolution JSON, as deliver_tool_result stores it
  ARGV[10] mail_tail: the mail item without seq and its opening brace; (approved) also
      without its closing brace: the script appends ',"deadline":<deadline>}'
  ARGV[11] event_tail: approval_decided event tail; (approved) it ends before the deadline's
      value: the script appends it and '}}'
  ARGV[12] result_tail: (rejected, timeout) the tool_result_received event tail
  Undeclared key: the ready zset of the agent's stored target.

  Returns:
    'decided <ToolCallRecord JSON>'
    'decided_before <ToolCallRecord JSON>'  (nothing changes; the adapter tells duplicate from conflict)
    'not_awaiting_approval' | 'not_due' | 'agent_not_found' | 'unknown_call' | 'turn_finished'
]]
-- @include keys.lua
-- @include head.lua
-- @include calls.lua

-- Arguments, named in the order of the header (described in store/script/approvals.ts).
local head, calls, mail, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadlines = KEYS[5]
local prefix, agent_id, turn_json, turn_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local call_id, decision, now_str, approval_tail = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local resolution, mail_tail, event_tail, result_tail = ARGV[9], ARGV[10], ARGV[11], ARGV[12]

local h = read_head(head, { 'agentId', 'activeTurnId', 'workerTarget', '_mailSeq', 'lastEventId' })
if not h then
  return 'agent_not_found'
end
local call = redis.call('HMGET', calls, 'c:' .. call_id, 'a:' .. call_id, 'r:' .. call_id)
local base, overlay, prior = call[1], call[2], call[3]
if not base then
  return 'unknown_call'
end
local rec = decode_stored(base)
if type(rec) ~= 'table' then
  return 'unknown_call'
end
if type(rec.approval) ~= 'table' then
  return 'not_awaiting_approval'
end
-- Only a decision writes the overlay: a call that has one was decided.
if overlay then
  return 'decided_before ' .. merge_call(base, overlay, prior)
end
if h.activeTurnId ~= turn_json or prior then
  return 'turn_finished'
end
local now = tonumber(now_str)
if decision == 'timeout' and tonumber(rec.deadline) > now then
  return 'not_due'
end
local run_ms = tonumber(rec.approval.runMs)
if not run_ms then
  return redis.error_reply('unreadable approval of tool call ' .. call_id)
end
-- Numbers of the head are read before the first write: an unreadable head fails the call whole.
local bad = check_numbers(h, { '_mailSeq', 'lastEventId' })
if bad then
  return bad
end
local mail_seq, last_event = tonumber(h._mailSeq), tonumber(h.lastEventId)
local member = agent_id .. '\n' .. turn_id .. '\n' .. call_id

-- Checks done; writes follow.
local seq = int(mail_seq + 1)
local pending, last
if decision == 'approved' then
  local deadline = int(now + run_ms)
  overlay = '{"deadline":' .. deadline .. ',"approval":{"runMs":' .. int(run_ms) .. approval_tail .. '}'
  prior = nil
  redis.call('HSET', calls, 'a:' .. call_id, overlay)
  redis.call('ZADD', deadlines, deadline, member)
  pending = redis.call('RPUSH', mail, '{"seq":' .. seq .. ',' .. mail_tail .. ',"deadline":' .. deadline .. '}')
  last = append_events(events, last_event, turn_json, now_str, { event_tail .. deadline .. '}}' })
else
  overlay = '{"approval":{"runMs":' .. int(run_ms) .. approval_tail .. '}'
  prior = resolution
  redis.call('HSET', calls, 'a:' .. call_id, overlay, 'r:' .. call_id, resolution)
  redis.call('ZREM', deadlines, member)
  pending = redis.call('RPUSH', mail, '{"seq":' .. seq .. ',' .. mail_tail)
  last = append_events(events, last_event, turn_json, now_str, { event_tail, result_tail })
end
redis.call('HSET', head, '_mailSeq', seq, 'pendingMail', int(pending), 'lastEventId', int(last))
set_bell(ready_key(prefix, h.workerTarget), now_str, agent_id, true, true)
return 'decided ' .. merge_call(base, overlay, prior)
