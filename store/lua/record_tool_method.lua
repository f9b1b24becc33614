--[[
  record_tool_method: the tool registry notes one successful call of a role's
  method. Mirrors memoryStore.recordToolMethod.

  KEYS[1] tools: tools hash (role -> entry JSON)
  KEYS[2] forms: tool forms hash ('<role>\n<form>' -> the method first seen with that form)
      (both keys share the tag `{tools}` on the sharded layout: one slot; store/keys.ts)
  ARGV[1] role: role
  ARGV[2] method: method
  ARGV[3] form: the method's form (methodForm, computed by the caller)
  ARGV[4] now_text: now
  ARGV[5] calls_text: calls (a positive integer, checked by the caller; absent: 1)

  An entry that is not a JSON object (unreadable) is started afresh; one
  without `methods` (written before methods were recorded) keeps its other
  fields and gains the lists. A method whose form is new is appended to
  `methods`; another spelling of a known form is appended to `aliases`
  once; `calls` grows by ARGV[5] (a batch of calls of one method).

  Returns: 'recorded {"added":"method"|"alias"|"none","entry":{...}}'
  (an empty list may come back as {}: the adapter reads it as []).
]]
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local tools, forms = KEYS[1], KEYS[2]
local role, method, form, now_text = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local calls_text = ARGV[5]

local now = tonumber(now_text)
local n = tonumber(calls_text) or 1

local entry = {}
local raw = redis.call('HGET', tools, role)
if raw then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok and type(decoded) == 'table' then
    entry = decoded
  end
end
local methods = type(entry.methods) == 'table' and entry.methods or {}
local aliases = type(entry.aliases) == 'table' and entry.aliases or {}
local form_field = role .. '\n' .. form
local canonical = redis.call('HGET', forms, form_field)

local added = 'none'
if not canonical then
  added = 'method'
  for _, m in ipairs(methods) do
    if m == method then
      added = 'none'
    end
  end
elseif canonical ~= method then
  added = 'alias'
  for _, a in ipairs(aliases) do
    if type(a) == 'table' and a.alias == method then
      added = 'none'
    end
  end
end

-- Checks done; writes follow.
if added == 'method' then
  methods[#methods + 1] = method
elseif added == 'alias' then
  aliases[#aliases + 1] = { alias = method, method = canonical }
end
entry.methods = methods
entry.aliases = aliases
entry.role = role
entry.calls = (tonumber(entry.calls) or 0) + n
if type(entry.createdAt) ~= 'number' then
  entry.createdAt = now
end
entry.updatedAt = now
local text = cjson.encode(entry)
if not canonical then
  redis.call('HSET', forms, form_field, method)
end
redis.call('HSET', tools, role, text)
return 'recorded {"added":"' .. added .. '","entry":' .. text .. '}'
