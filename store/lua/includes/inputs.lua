--[[
  Task inputs in messages. A turn's user message is stored as a reference to
  its input (`{"role":"user","content":"","inputOf":"<turnId>"}`, store/
  inputs.ts), since the input is stored once per turn; readers resolve it.
]]

-- Replaces each input reference in `items` (message JSON texts) by the user
-- message holding that turn's input, read from the inputs hash.
local function resolve_input_refs(items, inputs_key)
  -- reads only: writes nothing.
  for i = 1, #items do
    local ref = string.match(items[i], '^{"role":"user","content":"","inputOf":(".*")}$')
    if ref then
      local turn = decode_stored(ref)
      local input = type(turn) == 'string' and redis.call('HGET', inputs_key, turn)
      local content = '""'
      if input then
        -- A JSON string literal is already the content's JSON; anything else becomes a string holding its JSON.
        content = string.sub(input, 1, 1) == '"' and input or cjson.encode(input)
      end
      items[i] = '{"role":"user","content":' .. content .. '}'
    end
  end
  return items
end
