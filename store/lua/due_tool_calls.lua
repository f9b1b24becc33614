--[[
  due_tool_calls: pending tool calls whose deadline is at or before now,
  oldest first. A member that is not `<agentId>\n<turnId>\n<toolCallId>`
  names no call anyone could answer or skip: it is removed, not listed.

  KEYS[1] deadlines zset
  ARGV[1] now   ARGV[2] limit (>= 1)
  ARGV[3] 'scores' to answer each member with its deadline (the sharded
          layout merges the shards by deadline), absent otherwise
  Returns: 'list ["<agentId>\n<turnId>\n<toolCallId>", ...]'
           'list [["<member>", deadline], ...]' with 'scores'
]]
-- no checks: it refuses nothing; its one write removes members that name no call.
-- @include head.lua

local scores = ARGV[3] == 'scores'
local due
if scores then
  due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
else
  due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
end
local step = scores and 2 or 1
local out, bad = {}, {}
for i = 1, #due, step do
  if not string.find(due[i], '^[^\n]*\n[^\n]*\n') then
    bad[#bad + 1] = due[i]
  elseif scores then
    out[#out + 1] = '[' .. cjson.encode(due[i]) .. ',' .. due[i + 1] .. ']'
  else
    out[#out + 1] = cjson.encode(due[i])
  end
end
if #bad > 0 then
  redis.call('ZREM', KEYS[1], unpack(bad))
end
return 'list ' .. json_list(out)
