--[[
  event_waits: records a named event's first arrival and answers the calls
  waiting for its name (store/port.ts invariant `named-event-waits`).
  Mirrors memoryStore.eventWaits.

  KEYS[1] waits: waits zset of the event's name (`<home>:waits:<name>`)
  KEYS[2] arrival: arrival string of the event's id (`<home>:event:<eventId>`)
  ARGV[1] now_str: now
  ARGV[2] keep_ms: how long the arrival is kept (ms)
  ARGV[3] drop: JSON array of members to remove first (`<agentId>\n<turnId>\n<toolCallId>`), '' for none
  ARGV[4] limit: the most waits answered (>= 1)

  Returns: 'waits {"since":n,"waits":["<agentId>\n<turnId>\n<toolCallId>", ...]}'
    the waits that began at or before the event's first arrival, oldest first
]]
-- no checks: it refuses nothing; it drops what it is given and keeps the first arrival.

-- Arguments, named in the order of the header (described in store/script/named-events.ts).
local waits, arrival = KEYS[1], KEYS[2]
local now_str, keep_ms, drop, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

if drop ~= '' then
  local members = cjson.decode(drop)
  if #members > 0 then
    redis.call('ZREM', waits, unpack(members))
  end
end
redis.call('SET', arrival, now_str, 'NX', 'PX', keep_ms)
local since = redis.call('GET', arrival) or now_str
local found = redis.call('ZRANGEBYSCORE', waits, '-inf', since, 'LIMIT', 0, limit)
local out = {}
for i = 1, #found do out[i] = cjson.encode(found[i]) end
return 'waits {"since":' .. since .. ',"waits":[' .. table.concat(out, ',') .. ']}'
