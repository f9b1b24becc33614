--[[
  list_tool_roles: every entry of the tool registry, by role name.

  KEYS[1] tools: tools hash
  Returns: 'list [["<role>", "<entry text>"], ...]' (each as a JSON string)
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local tools = KEYS[1]

local flat = redis.call('HGETALL', tools)
local out = {}
for i = 1, #flat, 2 do
  out[#out + 1] = '[' .. cjson.encode(flat[i]) .. ',' .. cjson.encode(flat[i + 1]) .. ']'
end
table.sort(out)
return 'list ' .. json_list(out)
