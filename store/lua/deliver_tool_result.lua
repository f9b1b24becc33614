--[[
  deliver_tool_result: first-wins result of one tool call (HTTP, watchdog).
  Mirrors memoryStore.deliverToolResult.

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
  ARGV[6] resolution: resolution JSON: {"status":"resolved","outcome":..,"afterExecution":..,"source":..,"resolvedAt":now}
  ARGV[7] mail_tail: mail tail: the MailItem JSON without seq and without its opening brace
  ARGV[8] event_tail: event tail (tool_result_received)
  ARGV[9] now_str: now
  ARGV[10] source_flag: '1' the watchdog (may resolve any call), 'd' a child agent's
      delivery (may resolve delegated calls), '0' any other source
  Undeclared keys: the ready zset of the agent's stored target; the waits
  zset of the named event the call waits for.

  Returns:
    'accepted <ToolCallRecord JSON>'
    'resolved <ToolCallRecord JSON>'  (resolved before; nothing changes; the
                                      adapter tells duplicate from already_resolved)
    'not_external'  (an in-process call and a source other than the watchdog)
    'delegated_call'  (a delegated call and a source other than its child or the watchdog)
    'agent_not_found' | 'unknown_call' | 'turn_finished'
    'approval_pending'  (the call waits for a person's approval; store/port.ts
                        invariant `approval-before-result`)
    'cancel_pending'  (source '0' only: a cancel of the turn is accepted and not
                      yet acknowledged; invariant `results-after-cancel`)
    'not_due'  (the watchdog, for an approved call whose moved deadline has not passed)
  A replayed delivery finds the call resolved and answers 'resolved'.
]]
-- @include keys.lua
-- @include head.lua
-- @include calls.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head, calls, mail, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadlines = KEYS[5]
local prefix, agent_id, turn_json, turn_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local call_id, resolution, mail_tail, event_tail = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local now_str, source_flag = ARGV[9], ARGV[10]

local may_answer_in_process = source_flag == '1'

local h = read_head(head, { 'agentId', 'activeTurnId', 'workerTarget', '_mailSeq', 'lastEventId', '_cancelSeq', '_cancelTurn' })
if not h then
  return 'agent_not_found'
end
local call = redis.call('HMGET', calls, 'c:' .. call_id, 'r:' .. call_id, 'a:' .. call_id)
local base, prior, overlay = call[1], call[2], call[3]
if not base then
  return 'unknown_call'
end
-- An in-process call is answered by its tool (the worker's commit) or the watchdog, never from outside.
local rec = decode_stored(base)
if type(rec) ~= 'table' then
  return 'unknown_call'
end
if rec.external ~= true and not may_answer_in_process then
  return 'not_external'
end
-- A delegated call is answered by its child agent (or the watchdog), never from outside.
if rec.delegated == true and source_flag == '0' then
  return 'delegated_call'
end
if prior then
  return 'resolved ' .. merge_call(base, overlay, prior)
end
if h.activeTurnId ~= turn_json then
  return 'turn_finished'
end
-- Invariant `results-after-cancel`: the latest cancel is aimed at this turn and still in the mail list
-- (acks remove a prefix), so the claim that applies it would drop a result mailed after it.
if source_flag == '0' and h._cancelTurn == turn_json then
  local first_pending = (tonumber(h._mailSeq) or 0) - redis.call('LLEN', mail) + 1
  if (tonumber(h._cancelSeq) or 0) >= first_pending then
    return 'cancel_pending'
  end
end
-- Nothing resolves a call a person has not approved yet (invariant `approval-before-result`).
if type(rec.approval) == 'table' then
  if not overlay then
    return 'approval_pending'
  end
  local decided = decode_stored(overlay)
  if may_answer_in_process and type(decided) == 'table' and (tonumber(decided.deadline) or 0) > tonumber(now_str) then
    return 'not_due'
  end
end
-- Numbers of the head are read before the first write: an unreadable head fails the call whole.
local bad = check_numbers(h, { '_mailSeq', 'lastEventId' })
if bad then
  return bad
end
local mail_seq, last_event = tonumber(h._mailSeq), tonumber(h.lastEventId)

-- The watchdog's timeout of a call waiting for a named event is the tool error `event_timeout`.
if source_flag == '1' and type(rec.event) == 'string' then
  resolution = (string.gsub(resolution, '"type":"timeout"', '"type":"event_timeout"', 1))
  mail_tail = (string.gsub(mail_tail, '"type":"timeout"', '"type":"event_timeout"', 1))
end

-- Checks done; writes follow.
redis.call('HSET', calls, 'r:' .. call_id, resolution)
redis.call('ZREM', deadlines, agent_id .. '\n' .. turn_id .. '\n' .. call_id)
if type(rec.event) == 'string' then
  -- A call waiting for a named event leaves its index (store/port.ts invariant `named-event-waits`).
  redis.call('ZREM', prefix .. ':waits:' .. rec.event, agent_id .. '\n' .. turn_id .. '\n' .. call_id)
end
local seq = int(mail_seq + 1)
local pending = redis.call('RPUSH', mail, '{"seq":' .. seq .. ',' .. mail_tail)
local last = append_events(events, last_event, turn_json, now_str, { event_tail })
redis.call('HSET', head, '_mailSeq', seq, 'pendingMail', int(pending), 'lastEventId', int(last))
set_bell(ready_key(prefix, h.workerTarget), now_str, agent_id, true, true)
return 'accepted ' .. merge_call(base, overlay, resolution)
