--[[
  read_messages: messages from an index on. A turn's user message is stored
  as a reference to the turn's input, `{"role":"user","content":"","inputOf":
  <turnId JSON>}` (store/inputs.ts); it is answered with the input as its
  content: a string input as is, any other input as its JSON text.

  Indexes are logical (store/port.ts invariant 18): the list holds the
  messages from messagesTrimmedThrough on.

  KEYS[1] messages list   KEYS[2] inputs hash   KEYS[3] head hash
  ARGV[1] fromIndex (>= 0)
  Returns: 'list [Message JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

local trimmed = tonumber(redis.call('HGET', KEYS[3], 'messagesTrimmedThrough')) or 0
local items = redis.call('LRANGE', KEYS[1], math.max(0, tonumber(ARGV[1]) - trimmed), -1)
for i = 1, #items do
  local ref = string.match(items[i], '^{"role":"user","content":"","inputOf":(".*")}$')
  if ref then
    local input = redis.call('HGET', KEYS[2], cjson.decode(ref))
    local content = '""'
    if input then
      -- A JSON string literal is already the content's JSON; anything else becomes a string holding its JSON.
      content = string.sub(input, 1, 1) == '"' and input or cjson.encode(input)
    end
    items[i] = '{"role":"user","content":' .. content .. '}'
  end
end
return 'list ' .. json_list(items)
