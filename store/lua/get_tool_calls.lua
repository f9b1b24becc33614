--[[
  get_tool_calls: every tool call of one turn.

  KEYS[1] calls: calls hash of the turn
  Returns: 'list [ToolCallRecord JSON, ...]' (unordered)
]]
-- reads only: writes nothing.
-- @include head.lua
-- @include calls.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local calls = KEYS[1]

local all = redis.call('HGETALL', calls)
local res, decided = {}, {}
for i = 1, #all, 2 do
  local kind = string.sub(all[i], 1, 2)
  if kind == 'r:' then
    res[string.sub(all[i], 3)] = all[i + 1]
  elseif kind == 'a:' then
    decided[string.sub(all[i], 3)] = all[i + 1]
  end
end
local out = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'c:' then
    local id = string.sub(all[i], 3)
    out[#out + 1] = merge_call(all[i + 1], decided[id], res[id])
  end
end
return 'list ' .. json_list(out)
