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
-- @include inputs.lua

local trimmed = tonumber(redis.call('HGET', KEYS[3], 'messagesTrimmedThrough')) or 0
local items = redis.call('LRANGE', KEYS[1], math.max(0, tonumber(ARGV[1]) - trimmed), -1)
resolve_input_refs(items, KEYS[2])
return 'list ' .. json_list(items)
