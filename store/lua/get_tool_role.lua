--[[
  get_tool_role: the tool registry's entry of one role.

  KEYS[1] tools: tools hash
  ARGV[1] role: role
  Returns: 'entry <entry text as stored>' | 'none'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local tools = KEYS[1]
local role = ARGV[1]

local v = redis.call('HGET', tools, role)
if not v then
  return 'none'
end
return 'entry ' .. v
