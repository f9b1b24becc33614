--[[
  due_tool_calls: pending tool calls whose deadline is at or before now,
  oldest first.

  KEYS[1] deadlines zset
  ARGV[1] now   ARGV[2] limit (>= 1)
  Returns: 'list ["<agentId>\n<turnId>\n<toolCallId>", ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out = {}
for i = 1, #due do out[i] = cjson.encode(due[i]) end
return 'list ' .. json_list(out)
