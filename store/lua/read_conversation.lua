--[[
  read_conversation: what the host builds the model's view from
  (store/port.ts invariant 18): the rolling summary, the logical index of
  the first retained message and the retained messages (user inputs filled
  in as read_messages does).

  KEYS[1] head hash   KEYS[2] messages list   KEYS[3] inputs hash   KEYS[4] summary string
  ARGV[1] '1': only the messages from max(messagesTrimmedThrough, summary.through) on; '0': all kept
  Returns: 'conversation {"summary":{...}|null,"firstIndex":n,"messages":[...]}' | 'none'
]]
-- reads only: writes nothing.
-- @include head.lua
-- @include inputs.lua

local v = redis.call('HMGET', KEYS[1], 'agentId', 'messagesTrimmedThrough')
if not v[1] then
  return 'none'
end
local trimmed = tonumber(v[2]) or 0
local summary = redis.call('GET', KEYS[4]) or 'null'
local from = trimmed
if ARGV[1] == '1' and summary ~= 'null' then
  from = math.max(trimmed, tonumber(string.match(summary, '"through":(%d+)')) or 0)
end
local items = redis.call('LRANGE', KEYS[2], from - trimmed, -1)
resolve_input_refs(items, KEYS[3])
return 'conversation {"summary":' .. summary .. ',"firstIndex":' .. int(from) ..
  ',"messages":' .. json_list(items) .. '}'
