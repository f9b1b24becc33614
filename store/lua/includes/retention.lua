--[[
  Retention at a turn end (store/port.ts invariant `retention`). Mirrors `retain` in
  store/memory.ts and `planRetention` in store/retention.ts step by step.
  Needs head.lua and keys.lua. Head fields it keeps (internal, read by the
  caller's HMGET before its checks end):
    _ckpts      the checkpoints' numbers, oldest first,
                `<eventId>:<bytes>:<ended>:<messageIndex>` joined by ','
                (their snapshots are the entries of the ckpts list, same order)
    _evBytes    UTF-8 bytes of every event appended by commits (running total)
    _ended      turns ended in all;  _endedBase  turns dropped already
  and the public eventsTrimmedThrough / messagesTrimmedThrough.
]]

-- The numbers of `_ckpts` as a list of {eventId, bytes, ended, messageIndex}.
local function parse_marks(text)
  local marks = {}
  if text and text ~= '' then
    for e, b, n, m in string.gmatch(text, '(%d+):(%d+):(%d+):(%d+)') do
      marks[#marks + 1] = { tonumber(e), tonumber(b), tonumber(n), tonumber(m) }
    end
  end
  return marks
end

local function join_marks(marks, from)
  local parts = {}
  for i = from, #marks do
    local m = marks[i]
    parts[#parts + 1] = int(m[1]) .. ':' .. int(m[2]) .. ':' .. int(m[3]) .. ':' .. int(m[4])
  end
  return table.concat(parts, ',')
end

--[[
  k: { events, msgs, ckpts, ended, turns, inputs, idem } keys of the agent
  s: { trimmed, msg_trimmed, last, bytes, ended, ended_base, marks, messages }
     numbers after the commit's appends (ended counts the turn ending now)
  limits: { max_events, max_bytes, max_turns, every }
  snapshot: the commit's snapshot JSON; now_str: the commit's time
  Returns head field/value pairs to write.
]]
local function retain(prefix, agent_id, k, s, limits, snapshot, now_str)
  -- no checks: the commit has checked; this trims what the rules say.
  local marks = s.marks
  local newest = #marks > 0 and marks[#marks][1] or s.trimmed
  if s.last - newest >= limits.every then
    marks[#marks + 1] = { s.last, s.bytes, s.ended, s.messages }
    redis.call('RPUSH', k.ckpts, '{"eventId":' .. int(s.last) .. ',"at":' .. now_str .. ',"messageIndex":' ..
      int(s.messages) .. ',"snapshot":' .. snapshot .. '}')
  end
  local trimmed = s.trimmed
  local base_bytes = (trimmed > 0 and #marks > 0) and marks[1][2] or 0
  local cut = 0
  if s.last - trimmed > limits.max_events or s.bytes - base_bytes > limits.max_bytes then
    -- Never at a checkpoint of this commit (eventId == last): the ending turn's events stay.
    for i = 1, #marks do
      local m = marks[i]
      if m[1] > trimmed and m[1] < s.last and s.last - m[1] <= limits.max_events and s.bytes - m[2] <= limits.max_bytes then
        cut = i
        break
      end
    end
    if cut == 0 then
      for i = #marks, 1, -1 do
        if marks[i][1] < s.last and marks[i][1] > trimmed then
          cut = i
          break
        end
      end
    end
  end
  local first = 1
  if cut > 0 then
    redis.call('LTRIM', k.events, marks[cut][1] - trimmed, -1)
    redis.call('LTRIM', k.ckpts, cut - 1, -1)
    trimmed = marks[cut][1]
    first = cut
  end
  local base_ended = trimmed > 0 and #marks >= first and marks[first][3] or 0
  local reach = math.min(s.ended - limits.max_turns, base_ended)
  local ended_base, msg_trimmed = s.ended_base, s.msg_trimmed
  if reach > ended_base then
    local n = reach - ended_base
    local gone = redis.call('LRANGE', k.ended, 0, n - 1)
    local msg_end = msg_trimmed
    for i = 1, #gone do
      local turn, key, at = string.match(gone[i], '^(.-)\n(.-)\n(%d+)$')
      if turn then
        redis.call('HDEL', k.turns, turn)
        redis.call('HDEL', k.inputs, turn)
        redis.call('DEL', agent_key(prefix, agent_id, 'calls:' .. turn))
        local owner = key ~= '' and redis.call('HGET', k.idem, 'k:' .. key)
        if owner and decode_stored(owner) == turn then
          redis.call('HDEL', k.idem, 'k:' .. key)
        end
        -- A turn cancelled while queued ended with no messages (0).
        msg_end = math.max(msg_end, tonumber(at))
      end
    end
    redis.call('LTRIM', k.ended, n, -1)
    ended_base = reach
    if msg_end > msg_trimmed then
      redis.call('LTRIM', k.msgs, msg_end - msg_trimmed, -1)
      msg_trimmed = msg_end
    end
  end
  return {
    'eventsTrimmedThrough', int(trimmed), 'messagesTrimmedThrough', int(msg_trimmed),
    '_ckpts', join_marks(marks, first), '_endedBase', int(ended_base),
  }
end
