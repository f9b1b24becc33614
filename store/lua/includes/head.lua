--[[
  The head hash holds one JSON text per AgentHead field, so a reply can splice
  stored texts into JSON without decoding them (the snapshot is never
  decoded in Lua). Long values live apart (set_head below), so the hash
  keeps short values only. Fields starting with "_" are internal:
    _mailSeq      last mail seq handed out
    _commit       token of the last applied commit (replay guard)
    _commitEvent  lastEventId right after that commit
    _cancel       token of the last accepted cancel (replay guard)
    _cancelSeq    mail seq of the last accepted cancel, until a commit acknowledges it
    _cancelTurn   the turn (JSON) that cancel is aimed at
    _recentTurns  the last turn ids enqueued without a key, '\n'-separated (replay guard)
    _taskSeq      last seq of a member of the delayed zset (includes/queue.lua)
    _failTurn     turn id JSON whose claims threw, _failCount how often (invariant `turn-end-without-machine`)
    _ckpts, _evBytes, _ended, _endedBase   retention (includes/retention.lua)
]]
local HEAD_FIELDS = {
  'agentId', 'agentName', 'workerTarget', 'createdAt', 'updatedAt', 'activeTurnId',
  'currentTask', 'epoch', 'version', 'snapshot', 'state', 'leaseOwner', 'leaseUntil',
  'runnableAt', 'pendingTasks', 'pendingMail', 'messageCount', 'lastEventId',
  'eventsTrimmedThrough', 'messagesTrimmedThrough', 'turnVersion', 'versionTurn',
}
-- Fields a head written before them lacks and a reply then leaves out (store/port.ts invariant `turn-versions`).
local OPTIONAL_FIELDS = { turnVersion = true, versionTurn = true }

--[[
  Long values live apart. Redis keeps a hash in its compact encoding
  (listpack) only while every value is at most `hash-max-listpack-value`
  bytes (64 by default); one longer value turns the whole hash into a
  hashtable for good (about 2 KB stored for 900 B of data). The head's values
  that can be long are written through set_head: the snapshot (always long),
  currentTask (a task's options, its turn id) and _recentTurns (up to 32 turn
  ids). One longer than HEAD_VALUE_MAX goes to its own string key,
  `<head key>:<field>` (same hash tag, same slot: store/keys.ts `headLong`),
  and the hash field holds LONG_MARK. Scripts derive these keys from the
  head key; on the sharded layout (Redis Cluster) the adapter also declares
  them, after the script's own KEYS, so a slot migration answers TRYAGAIN
  rather than letting a script write a key that already moved.

  Invariants:
  - A field holding LONG_MARK has its value in its key; any other value of
    the field is the value (also on heads written before long values moved
    out, and when a build that predates them writes the field during an
    upgrade: it then is the newer one). LONG_MARK is one NUL byte: no JSON
    text and no turn id list can be it, and a reply that carried it
    unresolved would not parse, so no reader takes it for a value.
  - Every script reads a long field through resolve before using it, and
    before its first write (a mark whose key is gone is refused, not read
    as null).
  - set_head deletes the key of a field that was long and is written short
    (when the caller read the field), so no stale value stays behind.
]]
local LONG_MARK = '\0'
local HEAD_VALUE_MAX = 64
local LONG_FIELDS = { snapshot = true, currentTask = true, _recentTurns = true }

local function long_key(head_key, name)
  return head_key .. ':' .. name
end

--[[
  Replaces h[name] by its value when it holds the mark. Returns false when
  the key is gone (the caller refuses before its first write).
]]
local function resolve(head_key, h, name)
  if h[name] ~= LONG_MARK then
    return true
  end
  local v = redis.call('GET', long_key(head_key, name))
  if not v then
    return false
  end
  h[name] = v
  h.__long = h.__long or {}
  h.__long[name] = true
  return true
end

--[[
  resolve() of each long field among `names`; nil when all resolved, else
  an error reply naming the field whose key is gone.
]]
local function resolve_long(head_key, h, names)
  for i = 1, #names do
    if LONG_FIELDS[names[i]] and not resolve(head_key, h, names[i]) then
      return redis.error_reply('unreadable head field ' .. names[i] .. ' of agent ' .. tostring(h.agentId) .. ': its key is gone')
    end
  end
  return nil
end

--[[
  HSET of the head from field/value pairs `w` (changed in place): a long
  field's value over HEAD_VALUE_MAX goes to its key and the mark to the hash;
  a long field written short drops its key when `h` (the caller's read of
  the head, or nil) shows it was long.
]]
local function set_head(head_key, w, h)
  -- no checks: the calling script has checked.
  for i = 1, #w - 1, 2 do
    local name = w[i]
    if LONG_FIELDS[name] then
      if #w[i + 1] > HEAD_VALUE_MAX then
        redis.call('SET', long_key(head_key, name), w[i + 1])
        w[i + 1] = LONG_MARK
      elseif h and (h[name] == LONG_MARK or (h.__long and h.__long[name])) then
        redis.call('DEL', long_key(head_key, name))
      end
    end
  end
  return redis.call('HSET', head_key, unpack(w))
end

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
    if not v and not OPTIONAL_FIELDS[name] then
      -- The trim points are absent from heads written before retention existed: 0.
      v = (name == 'eventsTrimmedThrough' or name == 'messagesTrimmedThrough') and '0' or 'null'
    end
    if v then
      parts[#parts + 1] = '"' .. name .. '":' .. v
    end
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

--[[
  The version (JSON text) the active turn is pinned to, or nil (store/port.ts
  invariant `turn-versions`): turnVersion while versionTurn is activeTurnId.
]]
local function pinned_version(h)
  if h.activeTurnId == 'null' or not h.turnVersion or h.turnVersion == 'null' or h.versionTurn ~= h.activeTurnId then
    return nil
  end
  return h.turnVersion
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

--[[
  A stored JSON text, decoded (store/port.ts invariant `well-formed-text`).
  Text written before lone surrogates were replaced may hold an escape
  `\ud800`..`\udfff` that cjson refuses ("invalid unicode escape code"):
  each such escape then reads as U+FFFD, what is written today. nil when the
  text is still not JSON, so a reader that can do without the value (an
  idempotency key, a turn's input) goes on, and none is wedged by it.
]]
local function decode_stored(text)
  local ok, v = pcall(cjson.decode, text)
  if ok then
    return v
  end
  local fixed = string.gsub(text, '(\\+)([uU][dD][89a-fA-F]%x%x)', function(bs, esc)
    -- An odd run of backslashes ends in the escape's own; an even one is escaped backslashes and text.
    if #bs % 2 == 1 then
      return string.sub(bs, 2) .. '\\ufffd'
    end
    return bs .. esc
  end)
  ok, v = pcall(cjson.decode, fixed)
  if ok then
    return v
  end
  return nil
end
