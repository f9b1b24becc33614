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

if redis.call('EXISTS', head) == 0 then
  return 'agent_not_found'
end
local h = redis.call('HMGET', head, 'activeTurnId', '_cancel', 'workerTarget')
local active = h[1]
if active == 'null' then
  return 'not_active'
end
local token = now_str .. '\n' .. active .. '\n' .. reason_json
if h[2] == token then
  return 'accepted'
end

-- Checks done; writes follow.
local seq = redis.call('HINCRBY', head, '_mailSeq', 1)
local pending = redis.call('RPUSH', mail, '{"seq":' .. int(seq) .. ',' .. mail_tail)
redis.call('HSET', head, 'pendingMail', int(pending), '_cancel', token)
append_events(head, events, active, now_str, { event_tail })
redis.call('ZADD', ready_key(prefix, h[3]), 'LT', now_str, agent_id)
return 'accepted'
