--[[
  due_tool_calls: pending tool calls whose deadline is at or before now,
  oldest first. A member that is not `<agentId>\n<turnId>\n<toolCallId>`
  names no call anyone could answer or skip: it is removed, not listed.

  KEYS[1] deadlines zset
  ARGV[1] now   ARGV[2] limit (>= 1)
  Returns: 'list ["<agentId>\n<turnId>\n<toolCallId>", ...]'
]]
-- no checks: it refuses nothing; its one write removes members that name no call.
-- @include head.lua

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out, bad = {}, {}
for i = 1, #due do
  if string.find(due[i], '^[^\n]*\n[^\n]*\n') then
    out[#out + 1] = cjson.encode(due[i])
  else
    bad[#bad + 1] = due[i]
  end
end
if #bad > 0 then
  redis.call('ZREM', KEYS[1], unpack(bad))
end
return 'list ' .. json_list(out)
