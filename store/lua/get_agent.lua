--[[
  get_agent: the head of one agent.

  KEYS[1] head hash
  Returns: 'head {AgentHead JSON}' | 'none'
]]
-- @include head.lua

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 'none'
end
return 'head ' .. head_json(KEYS[1])
