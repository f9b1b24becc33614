--[[
  read_events: events with id > max(after, eventsTrimmedThrough), at most
  `limit`, and at most `maxBytes` bytes of event JSON (the first event
  always comes). Ids are dense, and retention removes a prefix of the log
  (store/port.ts invariant `retention`), so the event with id k sits at list index
  k-1-eventsTrimmedThrough. With a budget the list is read in slices, so a
  page of large events is not loaded whole.
  With the page come, in the same atomic read, the transitions outside it
  that its compact events name (store/port.ts invariant `served-events`;
  common/event-form.ts `namedOutside`): an event's data ends with
  `"ref":<n>` (a chunk's with `"ref":<n>,"from":<a>,"to":<b>`), naming id
  + n. A non-compact event whose data happens to end so only costs a read
  the caller does not use; a named id the list does not hold is left out
  (the caller then serves the event as trimmed).

  KEYS[1] events: events list
  KEYS[2] head: head hash
  ARGV[1] after_text: after (>= 0)
  ARGV[2] limit_text: limit (>= 1)
  ARGV[3] max_bytes: maxBytes ('' = no budget)
  Returns: 'list [page, named]', each a JSON array of StoredEvent JSON:
  the page, then the transitions outside it that it names
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local events, head = KEYS[1], KEYS[2]
local after_text, limit_text, max_bytes = ARGV[1], ARGV[2], ARGV[3]

local trimmed = tonumber(redis.call('HGET', head, 'eventsTrimmedThrough')) or 0
local after, limit, budget = math.max(0, tonumber(after_text) - trimmed), tonumber(limit_text), tonumber(max_bytes)

-- The page: list indexes from `after` on.
local function read_page()
  if not budget then
    return redis.call('LRANGE', events, after, after + limit - 1)
  end
  local page, used, at, last = {}, 0, after, after + limit - 1
  while at <= last do
    local slice = redis.call('LRANGE', events, at, math.min(at + 15, last))
    if #slice == 0 then
      break
    end
    for i = 1, #slice do
      used = used + #slice[i]
      if #page > 0 and used > budget then
        return page
      end
      page[#page + 1] = slice[i]
    end
    at = at + #slice
  end
  return page
end

-- The id distance `ref` an event's JSON ends with (only its tail is searched), or nil.
local function ref_of(item)
  local tail = string.sub(item, -80)
  local ref = string.match(tail, '[,{]"ref":(%-?%d+)}}$') or string.match(tail, '[,{]"ref":(%-?%d+),"from":%d+,"to":%d+}}$')
  return ref and tonumber(ref)
end

-- The transitions outside the page that its events name, each once.
local function named(page)
  local first, out, seen = trimmed + after + 1, {}, {}
  local last = first + #page - 1
  for i = 1, #page do
    local ref = ref_of(page[i])
    local t = ref and first + i - 1 + ref
    if t and (t < first or t > last) and t > trimmed and not seen[t] then
      seen[t] = true
      local item = redis.call('LINDEX', events, t - 1 - trimmed)
      if item then
        out[#out + 1] = item
      end
    end
  end
  return out
end

local page = read_page()
return 'list [' .. json_list(page) .. ',' .. json_list(named(page)) .. ']'
