--[[
  read_messages: messages from an index on. A turn's user message is stored
  as a reference to the turn's input, `{"role":"user","content":"","inputOf":
  <turnId JSON>}` (store/inputs.ts); it is answered with the input as its
  content: a string input as is, any other input as its JSON text.

  Indexes are logical (store/port.ts invariant `retention`): the list holds the
  messages from messagesTrimmedThrough on.

  KEYS[1] msgs: messages list
  KEYS[2] inputs: inputs hash
  KEYS[3] head: head hash
  ARGV[1] from_index: fromIndex (>= 0)
  Returns: 'list [Message JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua
-- @include inputs.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local msgs, inputs, head = KEYS[1], KEYS[2], KEYS[3]
local from_index = ARGV[1]

local trimmed = tonumber(redis.call('HGET', head, 'messagesTrimmedThrough')) or 0
local items = redis.call('LRANGE', msgs, math.max(0, tonumber(from_index) - trimmed), -1)
resolve_input_refs(items, inputs)
return 'list ' .. json_list(items)
