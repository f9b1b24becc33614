--[[
  request_cancel: cancel mail aimed at one turn, then the bell.
  Mirrors memoryStore.requestCancel.

  KEYS[1] head: head hash
  KEYS[2] mail: mail list
  KEYS[3] events: events list
  KEYS[4] turns: turns hash
  KEYS[5] tasks: tasks list
  KEYS[6] idem: idem hash
  KEYS[7] delayed: delayed zset (includes/queue.lua)
  ARGV[1] prefix: home prefix
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] now_str: now
  ARGV[4] reason_json: reason JSON
  ARGV[5] turn_raw: turnId (raw; '' when the cancel names no turn)
  ARGV[6] turn_json: turnId JSON ('null' when the cancel names no turn)
  ARGV[7] by_field: ',"by":<name JSON or null>' (who asked, common/by.ts), or '' (no by)
  Undeclared key: the ready zset of the agent's stored target.

  The turn is fixed here: the named one when it is active, else (none named)
  the active one. The mail item and the event carry it, so the host applies
  the cancel to that turn only. `_cancelSeq` and `_cancelTurn` on the head
  name the latest cancel and its turn: a commit with stopAtCancel refuses
  while that cancel is pending (commit.lua, store/port.ts invariant `firm-cancels`).

  Returns: 'accepted <turnId JSON>' | 'agent_not_found' | 'not_active'
    | 'turn_finished' | 'turn_not_started' | 'turn_not_found'
  Replay guard: the same reason at the same `now` for the same turn as the
  last accepted cancel is a replay; it answers 'accepted' and writes nothing.
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include turns.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local head, mail, events, turns = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tasks, idem, delayed = KEYS[5], KEYS[6], KEYS[7]
local prefix, agent_id, now_str, reason_json = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local turn_raw, turn_json, by_field = ARGV[5], ARGV[6], ARGV[7]

local k = { turns = turns, tasks = tasks, delayed = delayed, idem = idem }

local h = read_head(head, { 'agentId', 'activeTurnId', 'workerTarget', '_mailSeq', 'lastEventId', '_cancel' })
if not h then
  return 'agent_not_found'
end
local target
if turn_json == 'null' then
  if h.activeTurnId == 'null' then
    return 'not_active'
  end
  target = h.activeTurnId
else
  local st = turn_status(k, h.activeTurnId, turn_raw, turn_json)
  if not st then
    return 'turn_not_found'
  elseif st == 'queued' then
    return 'turn_not_started'
  elseif st ~= 'active' then
    return 'turn_finished'
  end
  target = turn_json
end
local token = now_str .. '\n' .. target .. '\n' .. reason_json
if h._cancel == token then
  return 'accepted ' .. target
end

local bad = check_numbers(h, { '_mailSeq', 'lastEventId' })
if bad then
  return bad
end

-- Checks done; writes follow.
local seq = int(tonumber(h._mailSeq) + 1)
local pending = redis.call('RPUSH', mail,
  '{"seq":' .. seq .. ',"kind":"cancel","at":' .. now_str .. ',"reason":' .. reason_json .. ',"turnId":' .. target .. '}')
local last = append_events(events, tonumber(h.lastEventId), target, now_str,
  { '"type":"cancel_requested","data":{"reason":' .. reason_json .. ',"turnId":' .. target .. by_field .. '}}' })
redis.call('HSET', head, '_mailSeq', seq, 'pendingMail', int(pending), 'lastEventId', int(last), '_cancel', token,
  '_cancelSeq', seq, '_cancelTurn', target)
set_bell(ready_key(prefix, h.workerTarget), now_str, agent_id, true, true)
return 'accepted ' .. target
