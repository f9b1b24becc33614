--[[
  request_cancel: cancel mail for the active turn, then the bell.
  Mirrors memoryStore.requestCancel.

  KEYS[1] head hash   KEYS[2] mail list   KEYS[3] events list
  ARGV[1] key prefix  ARGV[2] agentId (raw)
  ARGV[3] now         ARGV[4] reason JSON
  ARGV[5] mail tail: {"kind":"cancel","at":..,"reason":..} without its opening brace
  ARGV[6] event tail (cancel_requested)
  Undeclared key: the ready zset of the agent's stored target.

  Returns: 'accepted' | 'agent_not_found' | 'not_active'
  Replay guard: the same reason at the same `now` for the same turn as the
  last accepted cancel is a replay; it answers 'accepted' and writes nothing.
]]
-- @include keys.lua
-- @include head.lua

local head, mail, events = KEYS[1], KEYS[2], KEYS[3]
local prefix, agent_id, now_str, reason_json, mail_tail, event_tail = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

local h = read_head(head, { 'agentId', 'activeTurnId', 'workerTarget', '_mailSeq', 'lastEventId', '_cancel' })
if not h then
  return 'agent_not_found'
end
if h.activeTurnId == 'null' then
  return 'not_active'
end
local token = now_str .. '\n' .. h.activeTurnId .. '\n' .. reason_json
if h._cancel == token then
  return 'accepted'
end

-- Checks done; writes follow.
local seq = int(tonumber(h._mailSeq) + 1)
local pending = redis.call('RPUSH', mail, '{"seq":' .. seq .. ',' .. mail_tail)
local last = append_events(events, tonumber(h.lastEventId), h.activeTurnId, now_str, { event_tail })
redis.call('HSET', head, '_mailSeq', seq, 'pendingMail', int(pending), 'lastEventId', int(last), '_cancel', token)
redis.call('ZADD', ready_key(prefix, h.workerTarget), 'LT', now_str, agent_id)
return 'accepted'
