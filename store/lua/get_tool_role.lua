--[[
  get_tool_role: the tool registry's entry of one role.

  KEYS[1] tools hash
  ARGV[1] role
  Returns: 'entry <entry text as stored>' | 'none'
]]
-- reads only: writes nothing.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 'none'
end
return 'entry ' .. v
