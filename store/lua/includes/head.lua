--[[
  The head hash holds one JSON text per AgentHead field, so a reply can splice
  stored texts into JSON without decoding them (the snapshot is never
  decoded in Lua). Fields starting with "_" are internal:
    _mailSeq      last mail seq handed out
    _commit       token of the last applied commit (replay guard)
    _commitEvent  lastEventId right after that commit
    _cancel       token of the last accepted cancel (replay guard)
    _recentTurns  the last turn ids enqueued without a key, '\n'-separated (replay guard)
    _failTurn     turn id JSON whose claims threw, _failCount how often (invariant 12)
    _ckpts, _evBytes, _ended, _endedBase   retention (includes/retention.lua)
]]
local HEAD_FIELDS = {
  'agentId', 'agentName', 'workerTarget', 'createdAt', 'updatedAt', 'activeTurnId',
  'currentTask', 'epoch', 'version', 'snapshot', 'state', 'leaseOwner', 'leaseUntil',
  'runnableAt', 'pendingTasks', 'pendingMail', 'messageCount', 'lastEventId',
  'eventsTrimmedThrough', 'messagesTrimmedThrough',
}

-- Integers are written with %d: tostring() would switch to exponent form past 14 digits.
local function int(n)
  return string.format('%d', n)
end

--[[
  One HMGET of the named fields into a table (name -> JSON text). Returns nil
  when the agent does not exist: agentId is set from the first task on, so
  names[1] must be 'agentId'.
]]
local function read_head(head_key, names)
  local v = redis.call('HMGET', head_key, unpack(names))
  if not v[1] then
    return nil
  end
  local h = {}
  for i = 1, #names do h[names[i]] = v[i] end
  return h
end

--[[
  Checks that the named head fields hold numbers. Scripts call it before
  their first write: a head they cannot read fails the call whole (an error
  reply, nothing written) instead of half-way through its writes.
]]
local function check_numbers(h, names)
  for i = 1, #names do
    if not tonumber(h[names[i]]) then
      return redis.error_reply('unreadable head field ' .. names[i] .. ' of agent ' .. tostring(h.agentId))
    end
  end
  return nil
end

-- The AgentHead JSON from a table holding every HEAD_FIELDS entry.
local function head_json(h)
  local parts = {}
  for i = 1, #HEAD_FIELDS do
    local name = HEAD_FIELDS[i]
    local v = h[name]
    if not v then
      -- The trim points are absent from heads written before retention existed: 0.
      v = (name == 'eventsTrimmedThrough' or name == 'messagesTrimmedThrough') and '0' or 'null'
    end
    parts[i] = '"' .. name .. '":' .. v
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- RPUSH in slices: unpack() of a very long table would overflow the Lua stack.
-- Returns the list length.
local function push_all(key, items)
  -- no checks: appends what the calling script has checked.
  local len = 0
  for i = 1, #items, 1000 do
    len = redis.call('RPUSH', key, unpack(items, i, math.min(i + 999, #items)))
  end
  return len
end

--[[
  Appends events with dense ids after `last` (the head's lastEventId). Each
  tail is the JSON of {type, data} without its opening brace; the script
  prepends id, at and turnId. Returns the new lastEventId, which the caller
  writes into the head.
]]
local function append_events(events_key, last, turn_id_json, now_str, tails)
  -- no checks: appends what the calling script has checked.
  local items, bytes = {}, 0
  for i = 1, #tails do
    items[i] = '{"id":' .. int(last + i) .. ',"at":' .. now_str .. ',"turnId":' .. turn_id_json .. ',' .. tails[i]
    bytes = bytes + #items[i]
  end
  push_all(events_key, items)
  return last + #tails, bytes
end

-- A JSON array of already encoded items.
local function json_list(items)
  return '[' .. table.concat(items, ',') .. ']'
end
