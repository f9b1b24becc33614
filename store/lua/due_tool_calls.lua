--[[
  due_tool_calls: pending tool calls whose deadline is at or before now,
  oldest first. A member that is not `<agentId>\n<turnId>\n<toolCallId>`
  names no call anyone could answer or skip: it is removed, not listed.

  KEYS[1] deadlines: deadlines zset
  ARGV[1] now_str: now
  ARGV[2] limit: limit (>= 1)
  ARGV[3] mode: 'scores' to answer each member with its deadline (the sharded
      layout merges the shards by deadline), absent otherwise
  Returns: 'list ["<agentId>\n<turnId>\n<toolCallId>", ...]'
           'list [["<member>", deadline], ...]' with 'scores'
]]
-- no checks: it refuses nothing; its one write removes members that name no call.
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/turn-protocol.ts).
local deadlines = KEYS[1]
local now_str, limit, mode = ARGV[1], ARGV[2], ARGV[3]

local scores = mode == 'scores'
local due
if scores then
  due = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now_str, 'WITHSCORES', 'LIMIT', 0, limit)
else
  due = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now_str, 'LIMIT', 0, limit)
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
  redis.call('ZREM', deadlines, unpack(bad))
end
return 'list ' .. json_list(out)
