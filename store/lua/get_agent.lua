--[[
  get_agent: the head of one agent.

  KEYS[1] head: head hash
  KEYS[2..] long_keys: the keys of the head's long values, given on the sharded layout only (includes/head.lua)
  Undeclared keys: those of the head's long values (includes/head.lua `long_key`).
  Returns: 'head {AgentHead JSON}' | 'none'
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local head = KEYS[1]

local h = read_head(head, HEAD_FIELDS)
if not h then
  return 'none'
end
local bad = resolve_long(head, h, HEAD_FIELDS)
if bad then
  return bad
end
return 'head ' .. head_json(h)
