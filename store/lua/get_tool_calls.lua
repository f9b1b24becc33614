--[[
  get_tool_calls: every tool call of one turn.

  KEYS[1] calls: calls hash of the turn
  Returns: 'list [ToolCallRecord JSON, ...]' (unordered)
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/reads.ts).
local calls = KEYS[1]

local all = redis.call('HGETALL', calls)
local res = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'r:' then
    res[string.sub(all[i], 3)] = all[i + 1]
  end
end
local out = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'c:' then
    local base = string.sub(all[i + 1], 1, -2)
    local r = res[string.sub(all[i], 3)]
    if r then
      out[#out + 1] = base .. ',' .. string.sub(r, 2)
    else
      out[#out + 1] = base .. ',"status":"pending"}'
    end
  end
end
return 'list ' .. json_list(out)
