--[[
  The head hash holds one JSON text per AgentHead field, so a reply can splice
  stored texts into JSON without decoding them (the snapshot is never
  decoded in Lua). Fields starting with "_" are internal:
    _mailSeq      last mail seq handed out
    _commit       token of the last applied commit (replay guard)
    _commitEvent  lastEventId right after that commit
    _cancel       token of the last accepted cancel (replay guard)
]]
local HEAD_FIELDS = {
  'agentId', 'agentName', 'workerTarget', 'createdAt', 'updatedAt', 'activeTurnId',
  'currentTask', 'epoch', 'version', 'snapshot', 'state', 'leaseOwner', 'leaseUntil',
  'runnableAt', 'pendingTasks', 'pendingMail', 'messageCount', 'lastEventId',
}

-- Integers are written with %d: tostring() would switch to exponent form past 14 digits.
local function int(n)
  return string.format('%d', n)
end

local function head_json(head_key)
  local v = redis.call('HMGET', head_key, unpack(HEAD_FIELDS))
  local parts = {}
  for i = 1, #HEAD_FIELDS do
    parts[i] = '"' .. HEAD_FIELDS[i] .. '":' .. (v[i] or 'null')
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- RPUSH in slices: unpack() of a very long table would overflow the Lua stack.
local function push_all(key, items)
  for i = 1, #items, 1000 do
    redis.call('RPUSH', key, unpack(items, i, math.min(i + 999, #items)))
  end
end

--[[
  Appends events with dense ids. Each tail is the JSON of {type, data} without
  its opening brace; the script prepends id, at and turnId. Returns the new
  lastEventId.
]]
local function append_events(head_key, events_key, turn_id_json, now_str, tails)
  if #tails == 0 then
    return tonumber(redis.call('HGET', head_key, 'lastEventId'))
  end
  local last = redis.call('HINCRBY', head_key, 'lastEventId', #tails)
  local first = last - #tails + 1
  local items = {}
  for i = 1, #tails do
    items[i] = '{"id":' .. int(first + i - 1) .. ',"at":' .. now_str .. ',"turnId":' .. turn_id_json .. ',' .. tails[i]
  end
  push_all(events_key, items)
  return last
end

-- A JSON array of already encoded items.
local function json_list(items)
  return '[' .. table.concat(items, ',') .. ']'
end
