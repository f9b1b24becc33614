--[[
  get_agent: the head of one agent.

  KEYS[1] head hash
  Returns: 'head {AgentHead JSON}' | 'none'
]]
-- reads only: writes nothing.
-- @include head.lua

local h = read_head(KEYS[1], HEAD_FIELDS)
if not h then
  return 'none'
end
return 'head ' .. head_json(h)
