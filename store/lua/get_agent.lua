--[[
  get_agent: the head of one agent.

  KEYS[1] head hash
  Undeclared keys: those of the head's long values (includes/head.lua `long_key`).
  Returns: 'head {AgentHead JSON}' | 'none'
]]
-- reads only: writes nothing.
-- @include head.lua

local h = read_head(KEYS[1], HEAD_FIELDS)
if not h then
  return 'none'
end
local bad = resolve_long(KEYS[1], h, HEAD_FIELDS)
if bad then
  return bad
end
return 'head ' .. head_json(h)
